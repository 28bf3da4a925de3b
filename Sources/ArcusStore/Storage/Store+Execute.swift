import ArcusCRDT
import GRDB

extension Store {
    /// Runs one DQL statement. SELECT reads a consistent snapshot without blocking writers;
    /// other statements run in their own write transaction (nothing is written if they fail).
    /// Errors in the statement are `DQLError`s naming the line and column.
    public func execute(_ statement: String, arguments: [String: Value] = [:]) throws -> QueryResult {
        try execute(try QueryExecutor.parse(statement), arguments: arguments)
    }

    func execute(_ statement: DQLStatement, arguments: [String: Value]) throws -> QueryResult {
        if case .settings(let settingsStatement) = statement { return QueryResult(items: try runSettings(settingsStatement)) }
        if statement.isReadOnly {
            let indexes = fieldIndexes
            return try read { db in
                try QueryExecutor(reading: db, indexes: indexes, virtualCollections: virtualCollections, keepsConflicts: conflictViewReadable)
                    .execute(statement, arguments: arguments)
            }
        }
        var result = QueryResult()
        try write { transaction in
            result = try QueryExecutor(transaction: transaction).execute(statement, arguments: arguments)
            let changes = transaction.changes
            result.commitID = changes.last.map { _ in changes.map(\.sequence).max() ?? 0 }
            result.writtenDocuments = changes.filter { $0.evicted == nil && $0.state != nil }.map(\.key)
        }
        return result
    }

    /// Registers an observer of a SELECT: `handler` receives the current result at once, then
    /// the result and its diff after every commit that changes it (local writes and merged
    /// remote changes alike), on a serial queue of its own, in commit order.
    public func registerObserver(
        _ query: String, arguments: [String: Value] = [:], handler: @escaping @Sendable (ObserverEvent) -> Void
    ) throws -> StoreObserver {
        let statement = try QueryExecutor.parse(query)
        switch statement {
        case .select: break
        case .explain, .profile:
            throw StoreError.invalidQuery("an observer needs a SELECT statement: EXPLAIN and PROFILE describe one run of a query; observe the SELECT itself")
        case .settings:
            throw StoreError.invalidQuery("an observer needs a SELECT statement: settings cannot be observed; read them with SHOW again instead")
        default:
            throw StoreError.invalidQuery("an observer needs a SELECT statement")
        }
        try statement.validate(arguments: arguments)
        guard case .select(let select) = try statement.binding(arguments) else {
            throw StoreError.invalidQuery("an observer needs a SELECT statement")
        }
        if VirtualCollections.isVirtual(select.collection) {
            return try virtualObservers.register(select, read: { [weak self] select in try self?.readVirtual(select) }, deliver: handler)
        }
        if statement.readsConflicts {
            throw StoreError.invalidQuery("conflicts() cannot be observed yet: the conflict view is not change-tracked; read it with SELECT again instead")
        }
        return try observe(select, handler: handler)
    }

    /// The result of a SELECT of a `system:` collection, for its observers.
    private func readVirtual(_ select: DQLSelect) throws -> [Value] {
        let indexes = fieldIndexes
        return try read { db in try QueryExecutor(reading: db, indexes: indexes, virtualCollections: virtualCollections, keepsConflicts: conflictViewReadable).select(select) }
    }

    /// Says that what a registered `system:` collection's rows are made of may have changed,
    /// so its observers read it again (soon, once for many calls); without it they still do,
    /// once a second and after each commit.
    public func virtualCollectionsChanged() { virtualObservers.changed() }

    func observe(_ select: DQLSelect, handler: @escaping @Sendable (ObserverEvent) -> Void) throws -> StoreObserver {
        let indexes = fieldIndexes
        // On the writer, so that no commit falls between the first result and the registration.
        return try onOpenWriter { db in
            try writeDeferredRows(db)
            let documents = try QueryExecutor(reading: db, indexes: indexes).matching(select.collection, select.whereClause)
            return try observers.register(try LiveQuery(select, documents: documents), deliver: handler)
        }
    }
}
