import ArcusStore

/// What one peer may do with this store's collections over a session: which collections it may
/// read (be sent documents of) and which it may write (have its own changes merged).
///
/// The engine enforces them per session (`SyncEngine.connect(_:pulling:permissions:)`):
/// - **Read**: no document (nor removal) of a collection the peer may not read is sent to it; a
///   subscription to such a collection is refused with `SyncErrorCode.notPermitted`; a
///   subscription to the whole store is served only what it may read, and this side vouches
///   for nothing with it (its `covers` would name the events withheld); an attachment is served
///   only when a document of a readable collection references it.
/// - **Write**: a document in a batch that carries events of the peer's own site (writes the
///   peer made itself) in a collection it may not write is refused — not merged, logged as a
///   warning, counted in `SyncStatistics.documentsRefused` — and the rest of the batch is merged.
///   Events of other sites are relayed whatever the collection (the peer passes on what it
///   received), which is what multi-hop needs.
///
/// `.all` (the default) permits everything. Certificates carry the same lists (ArcusMesh's
/// `CollectionPermissions`); the agent translates them with `Collections(names)`.
public struct SyncPermissions: Sendable, Equatable, CustomStringConvertible {
    /// Every collection, or those named.
    public enum Collections: Sendable, Hashable, CustomStringConvertible {
        case all
        case named(Set<String>)

        /// No collection.
        public static let none = Collections.named([])

        /// The set a list of names means, as certificates spell it: "*" alone, or among the
        /// names, means every collection.
        public init(_ names: some Sequence<String>) {
            let names = Set(names)
            self = names.contains("*") ? .all : .named(names)
        }

        public func contains(_ collection: String) -> Bool {
            switch self {
            case .all: return true
            case .named(let names): return names.contains(collection)
            }
        }

        /// Whether every collection this set holds, `other` holds too.
        public func isSubset(of other: Collections) -> Bool {
            switch (self, other) {
            case (_, .all): return true
            case (.all, .named): return false
            case (.named(let mine), .named(let theirs)): return mine.isSubset(of: theirs)
            }
        }

        /// ["*"] for every collection, otherwise the names sorted.
        public var names: [String] {
            switch self {
            case .all: return ["*"]
            case .named(let names): return names.sorted()
            }
        }

        public var description: String { names.isEmpty ? "none" : names.joined(separator: ",") }
    }

    public var read: Collections
    public var write: Collections

    public init(read: Collections = .all, write: Collections = .all) {
        self.read = read
        self.write = write
    }

    /// Everything: what every session had before permissions existed.
    public static let all = SyncPermissions()

    /// Whether the peer may read every document a subscription to `query` can match: one whole
    /// collection it may read, or the whole store when it may read everything.
    func mayReadAll(of query: SubscriptionQuery) -> Bool {
        if let collection = query.collection { return read.contains(collection) }
        return read == .all
    }

    public var description: String { "read \(read), write \(write)" }
}
