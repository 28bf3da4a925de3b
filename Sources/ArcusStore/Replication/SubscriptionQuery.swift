import ArcusCRDT
import Crypto
import Foundation

/// The documents a sync subscription asks peers for: every document of the store, or the
/// documents of one collection that a `SELECT * FROM coll [WHERE …]` matches.
///
/// Subscriptions sync whole documents, so projections, ORDER BY, LIMIT and OFFSET are refused.
/// A document that stops matching stays in the subscriber's store but no longer receives
/// changes through that subscription.
public struct SubscriptionQuery: Sendable, Hashable, CustomStringConvertible {
    /// The statement as given ("" for the whole store).
    public let text: String
    public let arguments: [String: Value]
    /// The collection, or nil for every collection.
    public let collection: String?
    /// The WHERE condition with its arguments bound.
    private let condition: DQLExpression?

    /// Every document in every collection.
    public static let everything = SubscriptionQuery(text: "", arguments: [:], collection: nil, condition: nil)

    private init(text: String, arguments: [String: Value], collection: String?, condition: DQLExpression?) {
        self.text = text
        self.arguments = arguments
        self.collection = collection
        self.condition = condition
    }

    /// Parses `SELECT * FROM coll [WHERE …]`; "" subscribes to the whole store.
    public init(_ text: String, arguments: [String: Value] = [:]) throws {
        if text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            self = .everything
            return
        }
        guard case .select(let select) = try QueryExecutor.parse(text) else {
            throw StoreError.invalidQuery("a subscription is a SELECT statement: SELECT * FROM collection [WHERE …]")
        }
        guard case .all = select.projection else {
            throw StoreError.invalidQuery("a subscription syncs whole documents: write SELECT * instead of naming fields")
        }
        guard select.orderBy.isEmpty, select.limit == nil, select.offset == nil else {
            throw StoreError.invalidQuery("a subscription cannot use ORDER BY, LIMIT or OFFSET: it syncs every matching document")
        }
        guard !DQLStatement.select(select).readsConflicts else {
            throw StoreError.invalidQuery("a subscription cannot use conflicts(): each device keeps its own conflict view, and peers match documents by their fields")
        }
        self.init(text: text, arguments: arguments, collection: select.collection,
                  condition: try select.whereClause?.binding(arguments))
    }

    public var description: String { text.isEmpty ? "the whole store" : text }

    /// Whether the live document `value` (with its `_id`) of `collection` matches.
    public func matches(collection: String, value: Value) -> Bool {
        guard let own = self.collection else { return true }
        guard own == collection else { return false }
        // A condition that cannot be evaluated on this document's shape does not match it.
        return (try? DQLEvaluator().matches(condition, document: value)) ?? false
    }

    /// Whether this query covers every document of `collection` (no condition, or the whole store).
    public func matchesAll(of collection: String) -> Bool {
        self.collection == nil || (self.collection == collection && condition == nil)
    }

    /// Whether every document `other` matches, this query matches too (as far as can be told
    /// without evaluating: equal queries, the whole store, or a whole collection).
    public func contains(_ other: SubscriptionQuery) -> Bool {
        if self == other || collection == nil { return true }
        guard let theirs = other.collection else { return false }
        return matchesAll(of: theirs)
    }

    /// A stable name for the query (text and arguments), the same in every process.
    public var identity: String {
        var hasher = SHA256()
        hasher.update(data: Data(text.utf8))
        hasher.update(data: Data([0]))
        hasher.update(data: Data(Value.object(arguments).jsonString.utf8))
        return hasher.finalize().prefix(12).map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    public static func == (a: SubscriptionQuery, b: SubscriptionQuery) -> Bool {
        a.text == b.text && a.arguments == b.arguments
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(text)
        hasher.combine(arguments)
    }
}
