import ArcusCRDT
import GRDB

/// Runs DQL statements against a store: SELECT through a read transaction (or the current
/// write transaction), everything else through the write transaction. Arguments are checked
/// and bound before anything runs, so a statement that fails writes nothing.
struct QueryExecutor {
    let db: Database
    let transaction: WriteTransaction?
    let indexes: [FieldIndex]
    let virtualCollections: VirtualCollections?
    /// Set by PROFILE: counts the documents reads yield and match.
    var counters: QueryCounters?
    /// The conflict view of the statement's collection, loaded when it reads `conflicts(path)`.
    private var conflicts: ConflictView?
    /// Whether the store keeps conflicts (`Store.conflictViewReadable`): reading them is an
    /// error that says how to turn them on, not an empty answer, when it does not.
    let keepsConflicts: Bool

    init(transaction: WriteTransaction) throws {
        db = try transaction.db
        self.transaction = transaction
        indexes = transaction.store.fieldIndexes
        virtualCollections = transaction.store.virtualCollections
        keepsConflicts = transaction.store.conflictViewReadable
    }

    init(reading db: Database, indexes: [FieldIndex], virtualCollections: VirtualCollections? = nil, keepsConflicts: Bool = true) {
        self.db = db
        transaction = nil
        self.indexes = indexes
        self.virtualCollections = virtualCollections
        self.keepsConflicts = keepsConflicts
    }

    static let conflictViewOff = """
        the conflict view is off on this store, so it keeps no conflicts to read: set conflicts_per_field (1 to 64, \
        e.g. 4) in the agent's config file on each device that should see them, and restart it (Docs/Conflicts.md)
        """

    static func parse(_ text: String) throws -> DQLStatement {
        try DQLParser.parse(text)
    }

    func execute(_ statement: DQLStatement, arguments: [String: Value]) throws -> QueryResult {
        try statement.validate(arguments: arguments)
        let bound = try statement.binding(arguments)
        if !bound.isReadOnly, let collection = bound.collection { try VirtualCollections.checkWritable(collection) }
        var executor = self
        if bound.readsConflicts || bound.collection == "system:conflicts" {
            guard keepsConflicts else { throw StoreError.invalidQuery(Self.conflictViewOff) }
        }
        if bound.readsConflicts { executor.conflicts = try FieldConflicts.view(of: bound.collection, db) }
        return try executor.run(bound)
    }

    /// An evaluator for the statement's documents.
    var evaluator: DQLEvaluator { DQLEvaluator(conflicts: conflicts) }

    private func run(_ bound: DQLStatement) throws -> QueryResult {
        switch bound {
        case .select(let select):
            return QueryResult(items: try self.select(select))
        case .insert(let insert):
            return QueryResult(mutatedDocumentIDs: try self.insert(insert))
        case .update(let update):
            return QueryResult(mutatedDocumentIDs: try self.update(update))
        case .updateCounter(let update):
            return QueryResult(mutatedDocumentIDs: try self.updateCounter(update))
        case .delete(let removal):
            return QueryResult(mutatedDocumentIDs: try remove(removal, evicting: false))
        case .evict(let removal):
            return QueryResult(mutatedDocumentIDs: try remove(removal, evicting: true))
        case .createIndex(let create):
            try writing().createIndex(create)
            return QueryResult()
        case .dropIndex(let drop):
            try writing().dropIndex(drop)
            return QueryResult()
        case .explain(let explained):
            return QueryResult(items: [.object(try QueryExplanation(executor: self).explain(explained))])
        case .profile(let select):
            return QueryResult(items: [.object(try QueryExplanation(executor: self).profile(select))])
        case .settings:
            // Settings belong to the host, not to the transaction: they would not roll back with it.
            throw StoreError.invalidQuery("SHOW and ALTER SYSTEM run on their own (Store.execute), not inside a write transaction")
        }
    }

    private func writing() throws -> WriteTransaction {
        guard let transaction else { throw StoreError.invalidQuery("this statement changes data; run it in a write transaction") }
        return transaction
    }

    // MARK: - Reading

    /// The documents of `collection` the condition matches, in store order.
    func matching(_ collection: String, _ condition: DQLExpression?, limit: Int? = nil) throws -> [Value] {
        var found: [Value] = []
        try forEachMatching(collection, condition) { document in
            found.append(document)
            return limit.map { found.count < $0 } ?? true
        }
        return found
    }

    /// Calls `body` with each document of `collection` the condition matches, in store order,
    /// while it returns true; nothing is kept, so a grouped SELECT holds only its groups.
    func forEachMatching(_ collection: String, _ condition: DQLExpression?, _ body: (Value) throws -> Bool) throws {
        if VirtualCollections.isVirtual(collection) {
            guard let virtualCollections else { throw StoreError.invalidQuery("\(collection) cannot be read here") }
            for row in try virtualCollections.rows(of: collection, db: db, indexes: indexes) {
                counters?.read += 1
                guard try evaluator.matches(condition, document: row) else { continue }
                counters?.matched += 1
                guard try body(row) else { return }
            }
            return
        }
        let plan = try QueryPlanner(db: db, indexes: indexes).plan(collection: collection, where: condition)
        let rows = try String.fetchCursor(db.cachedStatement(sql: plan.sql), arguments: plan.arguments)
        while let json = try rows.next() {
            let document = try Value(json: json)
            counters?.read += 1
            if try evaluator.matches(condition, document: document) {
                counters?.matched += 1
                guard try body(document) else { return }
            }
        }
    }

    /// Fills `table` with what the counting plan counts; false when SQL may have grouped some
    /// values differently from DQL, and the documents must be read instead.
    private func count(_ plan: QueryPlanner.Plan, into table: inout DQLGroupTable) throws -> Bool {
        guard case .countPerField = plan.access else {
            let count = try Int64.fetchOne(db.cachedStatement(sql: plan.sql), arguments: plan.arguments) ?? 0
            counters?.matched += Int(count)
            table.addCounted(count)
            return true
        }
        var groups: [(key: Value, count: Int64)] = []
        var keys = Set<Value>()
        let rows = try Row.fetchCursor(db.cachedStatement(sql: plan.sql), arguments: plan.arguments)
        while let row = try rows.next() {
            let kind: String? = row[1]
            // (Missing and null are one group in both, shown as null: their two rows add up.)
            guard kind.map({ !["true", "false", "array", "object"].contains($0) }) ?? true,
                  let key = Self.value(row[0] as DatabaseValue), key == .null || keys.insert(DQLGroupTable.normalised(key)).inserted else { return false }
            groups.append((key, row[2]))
        }
        for group in groups {
            counters?.matched += Int(group.count)
            table.addCounted(group.count, keys: [group.key])
        }
        return true
    }

    /// A scalar `json_extract` gave, as a DQL value (nil for a blob, which JSON has not).
    private static func value(_ sql: DatabaseValue) -> Value? {
        switch sql.storage {
        case .null: return .null
        case .int64(let i): return .int(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .blob: return nil
        }
    }

    func select(_ select: DQLSelect) throws -> [Value] {
        let offset = try select.offset?.resolve(arguments: [:]) ?? 0
        let limit = try select.limit?.resolve(arguments: [:])
        if let grouping = try DQLGrouping(select) {
            var table = DQLGroupTable(grouping, evaluator: evaluator)
            let counting = try QueryPlanner(db: db, indexes: indexes).countingPlan(select, grouping)
            if try !(counting.map { try count($0, into: &table) } ?? false) {
                table = DQLGroupTable(grouping, evaluator: evaluator)
                try forEachMatching(select.collection, select.whereClause) { document in
                    try table.add(document)
                    return true
                }
            }
            return try table.rows(offset: offset, limit: limit)
        }
        // Without ORDER BY the scan can stop once it has what LIMIT asks for.
        let stopAfter = select.orderBy.isEmpty ? limit.map { offset + $0 } : nil
        var documents = try matching(select.collection, select.whereClause, limit: stopAfter)
        if !select.orderBy.isEmpty {
            var keyed: [(keys: [Value?], document: Value)] = []
            keyed.reserveCapacity(documents.count)
            for document in documents { keyed.append((try evaluator.sortKeys(select.orderBy, document: document), document)) }
            keyed.sort { DQLEvaluator.precedes($0.keys, $1.keys, orderBy: select.orderBy) }
            documents = keyed.map(\.document)
        }
        let window = documents.dropFirst(offset).prefix(limit ?? Int.max)
        guard case .items = select.projection else { return Array(window) }
        return try window.map { try evaluator.project(select.projection, document: $0) }
    }

    // MARK: - Writing

    private func insert(_ insert: DQLInsert) throws -> [Value] {
        let transaction = try writing()
        var mutated: [Value] = []
        for document in try insert.evaluateDocuments(arguments: [:]) {
            guard case .object(var fields) = document else { throw StoreError.invalidDocument("INSERT documents must be objects") }
            let id = try DocumentIdentity.take(from: &fields)
            try DocumentValidation.check(fields)
            let key = DocumentKey(collection: insert.collection, id: id)
            var strategy = WriteStrategy.merge
            if insert.initial {
                strategy = .insertDefaultIfAbsent
            } else {
                switch insert.conflict {
                case .fail:
                    if try DocumentRows.isLive(db, key) { throw StoreError.documentExists(collection: insert.collection, id: id.jsonString) }
                case .doNothing: strategy = .insertIfAbsent
                case .doUpdate: strategy = .merge
                case .doUpdateLocalDiff: strategy = .updateDifferentOnly
                }
            }
            let changed = try transaction.mutate(key) { state, stamp in
                state.upsert(fields, strategy: strategy, at: stamp, hints: insert.typeHints)
            }
            if changed { mutated.append(id) }
        }
        return mutated
    }

    private func update(_ update: DQLUpdate) throws -> [Value] {
        let transaction = try writing()
        var mutated: [Value] = []
        for document in try matching(update.collection, update.whereClause) {
            guard let id = document[path: ["_id"]] else { continue }
            // Every right-hand side sees the document as it was before this statement.
            let values = try update.assignments.map { assignment -> (FieldPath, Value?) in
                let value = try evaluator.evaluate(assignment.value, in: document)
                if let value { try DocumentValidation.check(value, at: assignment.path) }
                return (assignment.path, value)
            }
            let changed = try transaction.mutate(DocumentKey(collection: update.collection, id: id)) { state, stamp in
                var delta: DocumentState?
                func record(_ change: DocumentState?) {
                    guard let change else { return }
                    if delta == nil { delta = change } else { delta!.join(change) }
                }
                for (path, value) in values {
                    // Assigning MISSING removes the field.
                    if let value {
                        record(state.set(path, to: value, at: stamp, hints: update.typeHints))
                    } else {
                        record(state.unset(path, at: stamp))
                    }
                }
                for path in update.unsets { record(state.unset(path, at: stamp)) }
                return delta
            }
            if changed { mutated.append(id) }
        }
        return mutated
    }

    private func updateCounter(_ update: DQLUpdateCounter) throws -> [Value] {
        let transaction = try writing()
        var mutated: [Value] = []
        for document in try matching(update.collection, update.whereClause) {
            guard let id = document[path: ["_id"]] else { continue }
            let amounts = try update.increments.map { ($0.path, try evaluator.incrementAmount($0, document: document)) }
            let changed = try transaction.mutate(DocumentKey(collection: update.collection, id: id)) { state, stamp in
                var delta: DocumentState?
                for (path, amount) in amounts {
                    guard let change = state.increment(path, by: amount, at: stamp) else { continue }
                    if delta == nil { delta = change } else { delta!.join(change) }
                }
                return delta
            }
            if changed { mutated.append(id) }
        }
        return mutated
    }

    private func remove(_ removal: DQLRemoval, evicting: Bool) throws -> [Value] {
        let transaction = try writing()
        var mutated: [Value] = []
        for document in try matching(removal.collection, removal.whereClause) {
            guard let id = document[path: ["_id"]] else { continue }
            let key = DocumentKey(collection: removal.collection, id: id)
            let changed = evicting ? try transaction.evict(key) : try transaction.remove(key)
            if changed { mutated.append(id) }
        }
        return mutated
    }
}

extension DocumentRows {
    static func isLive(_ db: Database, _ key: DocumentKey) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT json IS NOT NULL FROM document WHERE collection = ? AND id = ?",
                          arguments: [key.collection, key.storageID]) ?? false
    }
}
