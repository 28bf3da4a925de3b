import ArcusCRDT

/// Documents of a collection chosen by a condition, to read, change, remove, evict or observe.
/// Everything goes through the same evaluator as DQL statements.
public struct PendingQuery: Sendable {
    enum Condition: Sendable {
        case text(String)
    }

    let collection: StoreCollection
    let condition: Condition?
    let arguments: [String: Value]
    var order: [DQLOrderTerm] = []
    var limitCount: Int?

    init(collection: StoreCollection, condition: Condition?, arguments: [String: Value]) {
        self.collection = collection
        self.condition = condition
        self.arguments = arguments
    }

    /// The same query, sorted by `path` (later sorts break ties of earlier ones).
    public func sort(_ path: FieldPath, ascending: Bool = true) -> PendingQuery {
        var query = self
        query.order.append(DQLOrderTerm(expression: .path(DQLPath(path)), descending: !ascending))
        return query
    }

    public func limit(_ count: Int) -> PendingQuery {
        var query = self
        query.limitCount = count
        return query
    }

    func select() throws -> DQLSelect {
        var whereClause: DQLExpression?
        if case .text(let text)? = condition {
            // Binding checks that every argument the condition names was given.
            whereClause = try DQLParser.parseExpression(text).binding(arguments)
        }
        return DQLSelect(collection: collection.name, whereClause: whereClause, orderBy: order,
                         limit: limitCount.map { .literal(Int64($0)) })
    }

    public func exec() throws -> [Value] {
        let select = try select()
        let store = collection.store
        let indexes = store.fieldIndexes
        return try store.read { db in try QueryExecutor(reading: db, indexes: indexes).select(select) }
    }

    /// Changes every matching document with `body`, in one transaction; returns the `_id`s of
    /// the documents it changed.
    @discardableResult
    public func update(_ body: (MutableDocument) throws -> Void) throws -> [Value] {
        let select = try select()
        var changed: [Value] = []
        try collection.store.write { transaction in
            let documents = try QueryExecutor(transaction: transaction).select(select)
            for document in documents {
                guard let id = document[path: ["_id"]] else { continue }
                if try transaction.update(DocumentKey(collection: collection.name, id: id), body) { changed.append(id) }
            }
        }
        return changed
    }

    /// Removes every matching document (a synced removal).
    @discardableResult
    public func remove() throws -> [Value] { try removing(evict: false) }

    /// Drops every matching document from this store only.
    @discardableResult
    public func evict() throws -> [Value] { try removing(evict: true) }

    private func removing(evict: Bool) throws -> [Value] {
        let select = try select()
        var changed: [Value] = []
        try collection.store.write { transaction in
            for document in try QueryExecutor(transaction: transaction).select(select) {
                guard let id = document[path: ["_id"]] else { continue }
                let key = DocumentKey(collection: collection.name, id: id)
                if evict ? try transaction.evict(key) : try transaction.remove(key) { changed.append(id) }
            }
        }
        return changed
    }

    /// Observes the matching documents (see `Store.registerObserver`).
    public func observeLocal(_ handler: @escaping @Sendable (ObserverEvent) -> Void) throws -> StoreObserver {
        try collection.store.observe(try select(), handler: handler)
    }
}

/// One document by `_id`.
public struct PendingIDQuery: Sendable {
    let collection: StoreCollection
    public let id: Value

    var key: DocumentKey { DocumentKey(collection: collection.name, id: id) }

    /// The document as readers see it, or nil when there is none.
    public func exec() throws -> Value? {
        let key = self.key
        return try collection.store.read { db in try DocumentRows.visibleValue(db, DocumentRows.RowID(key)) }
    }

    /// Changes the document with `body` (creating it if needed); returns whether it changed.
    @discardableResult
    public func update(_ body: (MutableDocument) throws -> Void) throws -> Bool {
        var changed = false
        let key = self.key
        try collection.store.write { transaction in changed = try transaction.update(key, body) }
        return changed
    }

    @discardableResult
    public func remove() throws -> Bool {
        var changed = false
        let key = self.key
        try collection.store.write { transaction in changed = try transaction.remove(key) }
        return changed
    }

    @discardableResult
    public func evict() throws -> Bool {
        var changed = false
        let key = self.key
        try collection.store.write { transaction in changed = try transaction.evict(key) }
        return changed
    }

    public func observeLocal(_ handler: @escaping @Sendable (ObserverEvent) -> Void) throws -> StoreObserver {
        let select = DQLSelect(collection: collection.name, whereClause: .binary(.equal, .path(DQLPath(FieldPath(["_id"]))), .literal(id)))
        return try collection.store.observe(select, handler: handler)
    }
}
