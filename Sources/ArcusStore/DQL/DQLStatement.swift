import ArcusCRDT

/// One parsed DQL statement.
public enum DQLStatement: Sendable, Hashable {
    case select(DQLSelect)
    case insert(DQLInsert)
    /// `UPDATE … SET … / UNSET …`.
    case update(DQLUpdate)
    /// `UPDATE … APPLY f PN_INCREMENT BY n`.
    case updateCounter(DQLUpdateCounter)
    /// A synced removal.
    case delete(DQLRemoval)
    /// A local-only removal, never synced.
    case evict(DQLRemoval)
    case createIndex(DQLCreateIndex)
    case dropIndex(DQLDropIndex)
    /// `EXPLAIN statement`: describes how `statement` would run (see `QueryExplanation`) without
    /// running it. Never nests: the parser refuses `EXPLAIN EXPLAIN …`.
    indirect case explain(DQLStatement)
    /// `PROFILE select`: runs the SELECT and returns its plan with what it read and how long it
    /// took, not its rows. Only a SELECT: a profile that wrote would surprise people.
    case profile(DQLSelect)
    /// `SHOW …` or `ALTER SYSTEM …`: runtime settings, which the store hands to its host's
    /// (`Store.registerSettings`). Touches no document.
    case settings(DQLSettingsStatement)

    /// The collection the statement works on (`nil` for `DROP INDEX` without `ON`).
    public var collection: String? {
        switch self {
        case .select(let s): return s.collection
        case .insert(let s): return s.collection
        case .update(let s): return s.collection
        case .updateCounter(let s): return s.collection
        case .delete(let s), .evict(let s): return s.collection
        case .createIndex(let s): return s.collection
        case .dropIndex(let s): return s.collection
        case .explain(let s): return s.collection
        case .profile(let s): return s.collection
        case .settings: return nil
        }
    }

    /// The field types the statement declares with `COLLECTION name (field TYPE, …)`.
    public var typeHints: TypeHints {
        switch self {
        case .select(let s): return s.typeHints
        case .insert(let s): return s.typeHints
        case .update(let s): return s.typeHints
        case .updateCounter(let s): return s.typeHints
        case .delete(let s), .evict(let s): return s.typeHints
        case .createIndex, .dropIndex, .settings: return TypeHints()
        case .explain(let s): return s.typeHints
        case .profile(let s): return s.typeHints
        }
    }

    /// True for SELECT, EXPLAIN, PROFILE and settings statements: the statement changes no document.
    public var isReadOnly: Bool {
        switch self {
        case .select, .explain, .profile, .settings: return true
        default: return false
        }
    }

    /// Every argument the statement uses, in source order (repeats included).
    public var referencedArguments: [DQLArgumentReference] {
        var found: [DQLArgumentReference] = []
        forEachPart(expression: { $0.collectArguments(into: &found) }, count: { count in
            if case .argument(let name, let position) = count { found.append(DQLArgumentReference(name: name, position: position)) }
        })
        return found
    }

    /// Whether the statement reads the conflict view (`conflicts(path)`) anywhere.
    public var readsConflicts: Bool {
        var found = false
        forEachPart(expression: { expression in
            expression.visit { node in
                if case .call(.conflicts, _, _) = node { found = true }
                return !found
            }
        }, count: { _ in })
        return found
    }

    /// Calls `expression` with each expression of the statement and `count` with each LIMIT
    /// and OFFSET, in source order (the explained statement's for EXPLAIN and PROFILE).
    func forEachPart(expression visit: (DQLExpression) -> Void, count: (DQLCount) -> Void) {
        if case .explain(let inner) = self { return inner.forEachPart(expression: visit, count: count) }
        if case .profile(let select) = self { return DQLStatement.select(select).forEachPart(expression: visit, count: count) }
        func add(_ e: DQLExpression?) { if let e { visit(e) } }
        func add(_ c: DQLCount?) { if let c { count(c) } }
        switch self {
        case .select(let s):
            if case .items(let items) = s.projection { for item in items { add(item.expression) } }
            add(s.whereClause)
            for key in s.groupBy { add(key) }
            add(s.having)
            for term in s.orderBy { add(term.expression) }
            add(s.limit)
            add(s.offset)
        case .insert(let s):
            for document in s.documents { add(document.expression) }
        case .update(let s):
            for assignment in s.assignments { add(assignment.value) }
            add(s.whereClause)
        case .updateCounter(let s):
            for increment in s.increments { add(increment.amount) }
            add(s.whereClause)
        case .delete(let s), .evict(let s):
            add(s.whereClause)
        case .createIndex, .dropIndex, .explain, .profile, .settings:
            break
        }
    }

    /// Checks the arguments before anything runs, so a store can refuse the statement without
    /// writing: every referenced argument must exist, LIMIT and OFFSET arguments must be
    /// non-negative integers, and INSERT documents must evaluate to valid documents.
    /// Throws the first problem in source order.
    public func validate(arguments: [String: Value]) throws(DQLError) {
        for reference in referencedArguments where arguments[reference.name] == nil {
            throw DQLError.missingArgument(reference.name, at: reference.position)
        }
        switch self {
        case .select(let s):
            _ = try s.limit?.resolve(arguments: arguments)
            _ = try s.offset?.resolve(arguments: arguments)
        case .insert(let s):
            _ = try s.evaluateDocuments(arguments: arguments)
        case .explain(let s):
            try s.validate(arguments: arguments)
        case .profile(let s):
            try DQLStatement.select(s).validate(arguments: arguments)
        default:
            break
        }
    }
}

extension DQLError {
    static func missingArgument(_ name: String, at position: DQLSourcePosition) -> DQLError {
        DQLError(.missingArgument, "missing argument '\(name)': the statement uses :\(name) but the arguments have no '\(name)'", at: position)
    }
}

// MARK: - SELECT

/// `SELECT [DISTINCT] projection FROM collection [WHERE …] [GROUP BY …] [HAVING …] [ORDER BY …]
/// [LIMIT n] [OFFSET n]`.
///
/// ORDER BY terms are evaluated against the document; a term that is just the alias of a
/// projection item (`SELECT year + 1 AS next … ORDER BY next`) is replaced by that item's
/// expression when parsed. A SELECT with GROUP BY, HAVING or an aggregate (or DISTINCT) returns
/// rows made from groups of documents instead: see `DQLGrouping`.
public struct DQLSelect: Sendable, Hashable {
    public var collection: String
    public var typeHints: TypeHints
    public var distinct: Bool
    public var projection: DQLProjection
    public var whereClause: DQLExpression?
    public var groupBy: [DQLExpression]
    public var having: DQLExpression?
    public var orderBy: [DQLOrderTerm]
    public var limit: DQLCount?
    public var offset: DQLCount?

    public init(collection: String, typeHints: TypeHints = TypeHints(), distinct: Bool = false, projection: DQLProjection = .all,
                whereClause: DQLExpression? = nil, groupBy: [DQLExpression] = [], having: DQLExpression? = nil,
                orderBy: [DQLOrderTerm] = [], limit: DQLCount? = nil, offset: DQLCount? = nil) {
        self.collection = collection
        self.typeHints = typeHints
        self.distinct = distinct
        self.projection = projection
        self.whereClause = whereClause
        self.groupBy = groupBy
        self.having = having
        self.orderBy = orderBy
        self.limit = limit
        self.offset = offset
    }

    /// Whether the result is made of groups (GROUP BY, HAVING or an aggregate) rather than of
    /// documents. `SELECT DISTINCT` alone groups too, by its projection, unless it is `*`.
    public var isGrouped: Bool {
        if !groupBy.isEmpty || having != nil { return true }
        if orderBy.contains(where: { $0.expression.containsAggregate }) { return true }
        guard case .items(let items) = projection else { return false }
        return distinct || items.contains { $0.expression.containsAggregate }
    }
}

public enum DQLProjection: Sendable, Hashable {
    /// `SELECT *`: whole documents.
    case all
    case items([DQLProjectionItem])
}

/// One projected expression. `name` is the key it gets in each result object: the alias, else
/// the last field name of a path, else `$n` for the n-th item (1-based). Names are unique within
/// a projection (the parser refuses duplicates).
public struct DQLProjectionItem: Sendable, Hashable {
    public var expression: DQLExpression
    public var alias: String?
    public var name: String

    public init(expression: DQLExpression, alias: String?, name: String) {
        self.expression = expression
        self.alias = alias
        self.name = name
    }
}

public struct DQLOrderTerm: Sendable, Hashable {
    public var expression: DQLExpression
    public var descending: Bool

    public init(expression: DQLExpression, descending: Bool = false) {
        self.expression = expression
        self.descending = descending
    }
}

/// A LIMIT or OFFSET: an integer literal or an argument that must hold a non-negative integer.
public enum DQLCount: Sendable, Hashable {
    case literal(Int64)
    case argument(name: String, position: DQLSourcePosition)

    /// The count, checked: a non-negative integer (a double with no fraction is accepted).
    public func resolve(arguments: [String: Value]) throws(DQLError) -> Int {
        switch self {
        case .literal(let n):
            return Int(clamping: n)
        case .argument(let name, let position):
            guard let value = arguments[name] else { throw DQLError.missingArgument(name, at: position) }
            switch value {
            case .int(let n) where n >= 0:
                return Int(clamping: n)
            case .double(let d) where d >= 0 && d.rounded(.towardZero) == d && d < 9.2e18:
                return Int(d)
            default:
                throw DQLError(.invalidArgument, "argument '\(name)' must be a non-negative integer, found \(value.jsonString)", at: position)
            }
        }
    }
}

// MARK: - INSERT

public struct DQLInsert: Sendable, Hashable {
    public var collection: String
    public var typeHints: TypeHints
    public var documents: [DQLInsertDocument]
    public var conflict: DQLConflictPolicy
    /// `INSERT INTO c INITIAL DOCUMENTS (…)`: default data, written only where no document with
    /// the `_id` exists and ordered before every real write (insert-default-if-absent).
    public var initial: Bool

    public init(collection: String, typeHints: TypeHints = TypeHints(), documents: [DQLInsertDocument],
                conflict: DQLConflictPolicy = .fail, initial: Bool = false) {
        self.collection = collection
        self.typeHints = typeHints
        self.documents = documents
        self.conflict = conflict
        self.initial = initial
    }

    /// The documents to insert, evaluated and checked: each is an object, its `_id` (when given)
    /// is a string or an object, and it nests no deeper than `Value.maximumNestingDepth`.
    public func evaluateDocuments(arguments: [String: Value]) throws(DQLError) -> [Value] {
        let evaluator = DQLEvaluator(arguments: arguments)
        var values: [Value] = []
        values.reserveCapacity(documents.count)
        for (i, document) in documents.enumerated() {
            let value = try evaluator.evaluate(document.expression, in: .object([:]))
            let which = documents.count == 1 ? "the document" : "document \(i + 1)"
            guard case .object(let fields)? = value else {
                let found = value.map { DQLEvaluator.typeName(of: $0) } ?? "missing"
                throw DQLError(.invalidDocument, "\(which) must be an object, found \(found)", at: document.position)
            }
            if let id = fields["_id"] {
                switch id {
                case .string, .object: break
                default:
                    throw DQLError(.invalidDocument, "the _id of \(which) must be a string or an object, found \(DQLEvaluator.typeName(of: id))", at: document.position)
                }
            }
            guard value?.nestingDepth ?? 0 <= Value.maximumNestingDepth else {
                throw DQLError(.invalidDocument, "\(which) nests deeper than \(Value.maximumNestingDepth) levels", at: document.position)
            }
            values.append(.object(fields))
        }
        return values
    }
}

public struct DQLInsertDocument: Sendable, Hashable {
    public var expression: DQLExpression
    public var position: DQLSourcePosition

    public init(expression: DQLExpression, position: DQLSourcePosition) {
        self.expression = expression
        self.position = position
    }
}

/// What INSERT does when a document with the same `_id` exists.
public enum DQLConflictPolicy: String, Sendable, Hashable {
    /// No clause or `ON ID CONFLICT FAIL`: the statement fails and writes nothing.
    case fail
    /// `ON ID CONFLICT DO UPDATE`: merge the given fields into the existing document.
    case doUpdate
    /// `ON ID CONFLICT DO NOTHING`: keep the existing document.
    case doNothing
    /// `ON ID CONFLICT DO UPDATE_LOCAL_DIFF`: merge, writing only fields whose value differs.
    case doUpdateLocalDiff
}

// MARK: - UPDATE

public struct DQLUpdate: Sendable, Hashable {
    public var collection: String
    public var typeHints: TypeHints
    /// `SET path = value`, in source order. Paths are unique and none is a prefix of another.
    public var assignments: [DQLAssignment]
    /// `UNSET path`: fields to remove.
    public var unsets: [FieldPath]
    public var whereClause: DQLExpression?

    public init(collection: String, typeHints: TypeHints = TypeHints(), assignments: [DQLAssignment],
                unsets: [FieldPath] = [], whereClause: DQLExpression? = nil) {
        self.collection = collection
        self.typeHints = typeHints
        self.assignments = assignments
        self.unsets = unsets
        self.whereClause = whereClause
    }
}

/// `path = value`; the value is evaluated against each matched document (before any change).
public struct DQLAssignment: Sendable, Hashable {
    public var path: FieldPath
    public var value: DQLExpression
    public var position: DQLSourcePosition

    public init(path: FieldPath, value: DQLExpression, position: DQLSourcePosition) {
        self.path = path
        self.value = value
        self.position = position
    }
}

public struct DQLUpdateCounter: Sendable, Hashable {
    public var collection: String
    public var typeHints: TypeHints
    public var increments: [DQLIncrement]
    public var whereClause: DQLExpression?

    public init(collection: String, typeHints: TypeHints = TypeHints(), increments: [DQLIncrement],
                whereClause: DQLExpression? = nil) {
        self.collection = collection
        self.typeHints = typeHints
        self.increments = increments
        self.whereClause = whereClause
    }
}

/// `path PN_INCREMENT BY amount`; the amount is evaluated against each matched document and
/// must be a number (see `DQLEvaluator.incrementAmount`).
public struct DQLIncrement: Sendable, Hashable {
    public var path: FieldPath
    public var amount: DQLExpression
    public var position: DQLSourcePosition

    public init(path: FieldPath, amount: DQLExpression, position: DQLSourcePosition) {
        self.path = path
        self.amount = amount
        self.position = position
    }
}

// MARK: - DELETE, EVICT, indexes

/// `DELETE FROM c [WHERE …]` or `EVICT FROM c [WHERE …]`; no WHERE means every document.
public struct DQLRemoval: Sendable, Hashable {
    public var collection: String
    public var typeHints: TypeHints
    public var whereClause: DQLExpression?

    public init(collection: String, typeHints: TypeHints = TypeHints(), whereClause: DQLExpression? = nil) {
        self.collection = collection
        self.typeHints = typeHints
        self.whereClause = whereClause
    }
}

public struct DQLCreateIndex: Sendable, Hashable {
    public var name: String
    public var collection: String
    /// The indexed fields, in order (at least one, no duplicates).
    public var paths: [FieldPath]
    public var ifNotExists: Bool

    public init(name: String, collection: String, paths: [FieldPath], ifNotExists: Bool = false) {
        self.name = name
        self.collection = collection
        self.paths = paths
        self.ifNotExists = ifNotExists
    }
}

public struct DQLDropIndex: Sendable, Hashable {
    public var name: String
    /// `DROP INDEX name ON collection`; `nil` when the statement names no collection.
    public var collection: String?
    public var ifExists: Bool

    public init(name: String, collection: String? = nil, ifExists: Bool = false) {
        self.name = name
        self.collection = collection
        self.ifExists = ifExists
    }
}
