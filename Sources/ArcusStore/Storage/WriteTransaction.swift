import ArcusCRDT
import ArcusCodec
import Foundation
import GRDB
import Synchronization

/// One document changed by a commit: what observers and sync need to know.
public struct DocumentChange: Sendable {
    public var key: DocumentKey
    /// The delta the write produced (nil for an eviction, which is local and never synced).
    public var delta: DocumentState?
    /// The document's whole new state (nil when evicted).
    public var state: DocumentState?
    public var sequence: Int64

    /// The document as readers now see it, `_id` included; nil when removed or evicted.
    /// Computed on demand: most commits have no observer that needs it.
    public var value: Value? { state.flatMap { DocumentRows.visibleValue($0, id: key.id) } }
}

/// The writes of one transaction. Only valid inside the `Store.write` closure that made it.
public final class WriteTransaction {
    /// What one write did.
    public struct Result: Sendable, Hashable {
        public enum Kind: String, Sendable { case inserted, updated, removed, evicted }
        public var kind: Kind
        public var collection: String
        public var id: Value
    }

    unowned let store: Store
    let db: Database
    private(set) var changes: [DocumentChange] = []
    private(set) var results: [Result] = []
    /// The events this transaction wrote, and the versions of complete batches it merged.
    var versionAdded = VersionVector()

    init(store: Store, db: Database) {
        self.store = store
        self.db = db
    }

    /// Runs one DQL statement inside this transaction.
    public func execute(_ statement: String, arguments: [String: Value] = [:]) throws -> QueryResult {
        try QueryExecutor(transaction: self).execute(try QueryExecutor.parse(statement), arguments: arguments)
    }

    /// Merges `fields` into the document `fields["_id"]` of `collection` (generating an `_id`
    /// when there is none); returns the `_id`.
    @discardableResult
    public func upsert(_ fields: [String: Value], into collection: String, strategy: WriteStrategy = .merge, hints: TypeHints = .objectsAreMaps) throws -> Value {
        let id = try DocumentIdentity.id(in: fields)
        try DocumentValidation.check(fields, excluding: "_id")
        try mutate(DocumentKey(collection: collection, id: id)) { state, stamp in
            state.upsert(fields, excluding: "_id", strategy: strategy, at: stamp, hints: hints)
        }
        return id
    }

    /// Removes the document (a synced removal). Returns whether it was live.
    @discardableResult
    public func remove(_ key: DocumentKey) throws -> Bool {
        try mutate(key) { state, stamp in state.remove(at: stamp) }
    }

    /// Drops the document from this store only; other replicas keep it.
    @discardableResult
    public func evict(_ key: DocumentKey) throws -> Bool {
        let id = key.storageID
        let existed = try Bool.fetchOne(db, sql: "SELECT 1 FROM document WHERE collection = ? AND id = ?", arguments: [key.collection, id]) ?? false
        guard existed else { return false }
        try db.execute(sql: "DELETE FROM document WHERE collection = ? AND id = ?", arguments: [key.collection, id])
        try AttachmentReferences.clear(db, key)
        let sequence = store.nextSequence()
        changes.append(DocumentChange(key: key, delta: nil, state: nil, sequence: sequence))
        results.append(Result(kind: .evicted, collection: key.collection, id: key.id))
        return true
    }

    /// Applies one mutation to the document at `key` and stores the outcome. Returns whether
    /// the mutation changed anything.
    @discardableResult
    func mutate(_ key: DocumentKey, _ mutation: (inout DocumentState, Stamp) -> DocumentState?) throws -> Bool {
        let row = DocumentRows.RowID(key)
        var state = try DocumentRows.load(db, row) ?? DocumentState()
        let wasLive = state.isLive, hadAttachments = !state.attachments.isEmpty
        guard let delta = mutation(&state, store.stamp()) else { return false }
        try save(row, state: state, delta: delta, wasLive: wasLive, hadAttachments: hadAttachments)
        return true
    }

    /// Stores a document's new state and records the change. A local change adds its events to
    /// the store's version vector; a merged one does not (see `merge`).
    func save(_ row: DocumentRows.RowID, state: DocumentState, delta: DocumentState, wasLive: Bool, hadAttachments: Bool, local: Bool = true) throws {
        let sequence = store.nextSequence()
        let json = state.visibleJSON(adding: ("_id", row.key.id))
        try DocumentRows.store(db, row, state: state, json: json, sequence: sequence, encoder: store.stateEncoder)
        try AttachmentReferences.update(db, row, state: state, hadAttachments: hadAttachments)
        changes.append(DocumentChange(key: row.key, delta: delta, state: state, sequence: sequence))
        if local { delta.forEachEvent { versionAdded.observe($0) } }
        let kind: Result.Kind = json == nil ? .removed : (wasLive ? .updated : .inserted)
        results.append(Result(kind: kind, collection: row.key.collection, id: row.key.id))
    }

    /// Before commit: persists the version vector, and arranges for observers to hear of the changes
    /// once (and only if) the commit succeeds — on the writer, so in commit order.
    func finish() throws {
        guard !changes.isEmpty else { return }
        try SiteVersions.write(versionAdded, db)
        // Observers register on the writer, so none can appear between this check and the commit.
        guard !store.observers.isEmpty else { return }
        let changes = self.changes
        let observers = store.observers
        db.afterNextTransaction(onCommit: { _ in observers.committed(changes) })
    }

    func createIndex(_ create: DQLCreateIndex) throws {
        for path in create.paths { try FieldIndex.checkIndexable(path) }
        let index = FieldIndex(name: create.name, collection: create.collection, paths: create.paths)
        if store.fieldIndexes.contains(where: { $0.name == create.name }) {
            if create.ifNotExists { return }
            throw StoreError.invalidQuery("an index named \(create.name) already exists; drop it first or use CREATE INDEX IF NOT EXISTS")
        }
        try index.create(db)
        // The cache follows the commit; a rollback drops the SQL index and the cache entry alike.
        let store = self.store
        db.afterNextTransaction(onCommit: { db in
            store.indexes.withLock { $0 = (try? FieldIndex.all(db)) ?? $0 }
        })
        store.indexes.withLock { $0.append(index) }
    }

    func dropIndex(_ drop: DQLDropIndex) throws {
        guard let index = store.fieldIndexes.first(where: { $0.name == drop.name && (drop.collection == nil || $0.collection == drop.collection) }) else {
            if drop.ifExists { return }
            throw StoreError.invalidQuery("there is no index named \(drop.name)")
        }
        try index.drop(db)
        store.indexes.withLock { $0.removeAll { $0.name == index.name } }
    }
}

/// Reading and writing `document` rows.
enum DocumentRows {
    /// A document's primary key, its `_id` rendered once.
    struct RowID {
        let key: DocumentKey
        let id: String

        init(_ key: DocumentKey) {
            self.key = key
            id = key.storageID
        }
    }

    static func load(_ db: Database, _ key: DocumentKey) throws -> DocumentState? {
        try load(db, RowID(key))
    }

    static func load(_ db: Database, _ row: RowID) throws -> DocumentState? {
        let statement = try RawStatement(db, sql: "SELECT state FROM document WHERE collection = ? AND id = ?")
        try statement.bind(row.key.collection, at: 1)
        try statement.bind(row.id, at: 2)
        return try statement.firstBlob { blob in try decode(Array(blob), row.key) }
    }

    /// The document as readers see it, from its materialised JSON; nil when there is none.
    static func visibleValue(_ db: Database, _ row: RowID) throws -> Value? {
        let statement = try db.cachedStatement(sql: "SELECT json FROM document WHERE collection = ? AND id = ?")
        guard let json = try String.fetchOne(statement, arguments: [row.key.collection, row.id]) else { return nil }
        return try Value(json: json)
    }

    static func decode(_ blob: Data, _ key: DocumentKey) throws -> DocumentState {
        try decode(Array(blob), key)
    }

    static func decode(_ bytes: [UInt8], _ key: DocumentKey) throws -> DocumentState {
        var context = DecodingContext()
        var reader = ByteReader(bytes)
        do {
            return try context.readDocument(from: &reader)
        } catch {
            throw StoreError.corruptDocument(collection: key.collection, id: key.storageID, reason: error)
        }
    }

    /// The document as readers see it, with its `_id`; nil when not live.
    static func visibleValue(_ state: DocumentState, id: Value) -> Value? {
        guard case .object(var fields)? = state.value else { return nil }
        fields["_id"] = id
        return .object(fields)
    }

    static func store(_ db: Database, _ row: RowID, state: DocumentState, json: String?, sequence: Int64, encoder: borrowing Mutex<StateEncoder>) throws {
        let statement = try RawStatement(db, sql: """
            INSERT INTO document (collection, id, state, json, seq) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (collection, id) DO UPDATE SET state = excluded.state, json = excluded.json, seq = excluded.seq
            """)
        try statement.bind(row.key.collection, at: 1)
        try statement.bind(row.id, at: 2)
        try encoder.withLock { encoder in try encoder.encode(state) { try statement.bind($0, at: 3) } }
        try statement.bind(json, at: 4)
        try statement.bind(sequence, at: 5)
        try statement.execute()
    }
}

extension DocumentKey {
    /// The `_id` as stored: its canonical JSON, so string and object ids never collide.
    var storageID: String { id.jsonString }
}
