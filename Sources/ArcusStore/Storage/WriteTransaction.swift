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
    /// For an eviction, the state it dropped.
    public var evicted: DocumentState? = nil
    /// Whether readers do not see it (`Store.withhold`): evicted, and not back whole yet.
    public var withheld = false

    /// The document as readers now see it, `_id` included; nil when removed, evicted or
    /// withheld. Computed on demand: most commits have no observer that needs it.
    public var value: Value? { withheld ? nil : state.flatMap { DocumentRows.visibleValue($0, id: key.id) } }
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
    /// The connection, for statements that neither read nor change the `document` table.
    let connection: Database
    /// The connection, for statements that read or change the `document` table: a store in
    /// memory first writes, in this transaction, the rows its documents wait for.
    var db: Database {
        get throws {
            try writeDeferredRows()
            return connection
        }
    }
    public private(set) var changes: [DocumentChange] = []
    private(set) var results: [Result] = []
    /// The events this transaction wrote, and the versions of complete batches it merged.
    var versionAdded = VersionVector()
    /// Whether it evicted a document (whose local events the recovery at open cannot see).
    private var evicted = false
    /// The change-log position `site_version` is complete up to once this commits, if it
    /// checkpointed the version vector.
    private(set) var checkpoint: Int64?
    /// The latest time a merged event may carry, read once per transaction.
    private(set) lazy var latestAdmissibleTime = store.latestAdmissibleTime
    /// The store's version vector when this transaction first merged a delta: merged events
    /// enter it only at commit (`observe`), so it says which creations were here before.
    private(set) lazy var versionBeforeMerging = store.version
    /// Sites whose merged events this transaction refused for being stamped beyond
    /// `latestAdmissibleTime`: a version a peer vouches for (`covers`) must claim none of them,
    /// here or in any record of what a peer said it has.
    public internal(set) var sitesRefusedForTime = Set<SiteID>()
    /// How many merged documents had events refused for their time.
    public internal(set) var documentsRefusedForTime = 0

    /// The documents whose kept conflicts this transaction changed, with what each keeps now.
    private var conflictsChanged: [DocumentKey: [FieldConflicts.KeptLoser]] = [:]
    /// What is to happen only if this transaction commits (`afterCommit`).
    private(set) var committedActions: [() -> Void] = []

    /// In memory (`DeferredRows`): the documents this transaction wrote, in the order it wrote
    /// them, which wait for their rows; and where each one's latest entry is.
    private var deferred: [(key: DocumentKey, document: DeferredRows.Document)] = []
    private var deferredIndex: [DocumentKey: Int] = [:]
    /// Whether this transaction wrote the rows that waited: every later save writes its row.
    private var rowsWritten = false
    /// Whether this transaction's saves leave their rows to wait.
    private var defersRows: Bool { store.deferredRows != nil && !rowsWritten }

    /// The statements every document write runs, prepared once per transaction.
    private var positionStatement: RawStatement?
    private var loadStatement: RawStatement?
    private var storeStatement: RawStatement?
    private var insertStatement: RawStatement?
    private var appendStatement: RawStatement?

    private func prepared(_ cached: inout RawStatement?, _ sql: String) throws -> RawStatement {
        if let cached { return cached }
        let statement = try RawStatement(connection, sql: sql)
        cached = statement
        return statement
    }

    init(store: Store, db: Database) {
        self.store = store
        connection = db
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
        let row = DocumentRows.RowID(key)
        guard let dropped = try load(row) else { return false }
        try db.execute(sql: "DELETE FROM document WHERE collection = ? AND id = ?", arguments: [key.collection, row.id])
        try AttachmentReferences.clear(db, key)
        if !keptLosers(key).isEmpty {
            try FieldConflicts.clearDocument(key, db)
            conflictsChanged[key] = []
        }
        let sequence = store.nextSequence()
        evicted = true
        changes.append(DocumentChange(key: key, delta: nil, state: nil, sequence: sequence, evicted: dropped))
        results.append(Result(kind: .evicted, collection: key.collection, id: key.id))
        return true
    }

    /// Records that a purge (`purge(_:under:keeping:)`) deleted the document: readers no longer
    /// see it, as after a removal; nothing is synced (no event was made).
    func recordPurged(_ key: DocumentKey, wasLive: Bool) {
        changes.append(DocumentChange(key: key, delta: nil, state: nil, sequence: store.nextSequence()))
        if wasLive { results.append(Result(kind: .removed, collection: key.collection, id: key.id)) }
    }

    /// Applies one mutation to the document at `key` and stores the outcome. Returns whether
    /// the mutation changed anything.
    @discardableResult
    func mutate(_ key: DocumentKey, _ mutation: (inout DocumentState, Stamp) -> DocumentState?) throws -> Bool {
        let row = DocumentRows.RowID(key)
        var state = try load(row, toChange: true) ?? DocumentState()
        let wasLive = state.isLive, hadAttachments = !state.attachments.isEmpty
        // Not given back to the cache when it changes nothing: the closure may have changed
        // `state` all the same (it is not ours), and the cache must hold what the row holds.
        guard let delta = mutation(&state, try store.stamp()) else { return false }
        try save(row, state: state, delta: delta, wasLive: wasLive, hadAttachments: hadAttachments, joinsDelta: true)
        return true
    }

    /// The document's state as this transaction sees it; nil when it has no row. `toChange`:
    /// the caller changes the state and then saves it, or gives it back to the cache unchanged
    /// (`DocumentStateCache.take`).
    func load(_ row: DocumentRows.RowID, toChange: Bool = false) throws -> DocumentState? {
        if defersRows {
            if let index = deferredIndex[row.key] { return deferred[index].document.state }
            if let waiting = store.deferredRows?.document(row.key) { return waiting.state }
        }
        // Not taken from the cache when rows wait: such a save caches nothing to put back.
        return try DocumentRows.load(row, position: prepared(&positionStatement, DocumentRows.positionSQL), load: prepared(&loadStatement, DocumentRows.loadSQL),
                                     site: store.site, cache: store.stateCache, toChange: toChange && !defersRows)
    }

    /// Stores a document's new state and records the change. A local change adds its events to
    /// the store's version vector; a merged one does not (see `merge`). `joinsDelta` says that
    /// `state` is the state this transaction loaded joined with `delta`, and nothing else: then
    /// the row may keep the delta appended rather than the state rewritten whole.
    ///
    /// `asNew`: the caller did not look for the row and `state` is `delta` joined into nothing.
    /// Then the state is written only if the document has no row, and `save` returns false,
    /// having changed nothing, if it has one. Such a state is cached only if it fits without
    /// pushing others out: a catch-up brings each document once, and caching at the cost of the
    /// documents used lately churned the cache (7% of a catching-up follower's time).
    @discardableResult
    func save(_ row: DocumentRows.RowID, state: DocumentState, delta: DocumentState, wasLive: Bool, hadAttachments: Bool, local: Bool = true,
              joinsDelta: Bool = false, asNew: Bool = false) throws -> Bool {
        if defersRows {
            try CollectionName.check(row.key.collection)
            if asNew, try load(row) != nil { return false }
            let sequence = store.nextSequence()
            let withheld = store.isWithheld(row.key)
            deferredIndex[row.key] = deferred.count
            deferred.append((row.key, DeferredRows.Document(state: state, sequence: sequence, withheld: withheld)))
            try recordSaved(row, state: state, delta: delta, sequence: sequence, withheld: withheld, visible: !withheld && state.hasVisibleValue,
                            wasLive: wasLive, hadAttachments: hadAttachments, local: local)
            return true
        }
        let sequence = store.nextSequence()
        let withheld = store.isWithheld(row.key)
        let json = withheld ? nil : state.visibleJSON(adding: ("_id", row.key.id))
        var written: DocumentRows.Written?
        if joinsDelta, !asNew, let (previous, layout) = store.stateCache.layout(of: row.key) {
            written = try DocumentRows.append(prepared(&appendStatement, DocumentRows.appendSQL), connection, row, delta: delta, json: json, sequence: sequence,
                                              onto: previous, laidOut: layout, encoder: store.stateEncoder)
        }
        if written == nil {
            let statement = asNew ? try prepared(&insertStatement, DocumentRows.insertSQL) : try prepared(&storeStatement, DocumentRows.storeSQL)
            written = try DocumentRows.store(statement, row, state: state, json: json, sequence: sequence, site: store.site, encoder: store.stateEncoder)
            if asNew, connection.changesCount == 0 {
                store.returnSequence(sequence)
                return false
            }
        }
        // Cached before the commit: a rollback empties the cache (see `DocumentStateCache`).
        store.stateCache.insert(state, of: row.key, at: sequence, storedBytes: written?.storedBytes ?? 0, layout: written?.layout, evicting: !asNew)
        try recordSaved(row, state: state, delta: delta, sequence: sequence, withheld: withheld, visible: json != nil,
                        wasLive: wasLive, hadAttachments: hadAttachments, local: local)
        return true
    }

    /// What every save records once the document is stored (or left to wait): its attachment
    /// references, the change, the events it adds, and the conflicts a local write settles.
    private func recordSaved(_ row: DocumentRows.RowID, state: DocumentState, delta: DocumentState, sequence: Int64, withheld: Bool, visible: Bool,
                             wasLive: Bool, hadAttachments: Bool, local: Bool) throws {
        try AttachmentReferences.update(connection, row, state: state, hadAttachments: hadAttachments)
        changes.append(DocumentChange(key: row.key, delta: delta, state: state, sequence: sequence, withheld: withheld))
        if local {
            delta.forEachEvent { versionAdded.observe($0) }
            // A local write has seen every value here: the fields it wrote have no conflicts left.
            let kept = keptLosers(row.key)
            if !kept.isEmpty {
                let left = try FieldConflicts.clear(delta.writtenFieldPaths, from: kept, of: row.key, connection)
                if left != kept { conflictsChanged[row.key] = left }
            }
        }
        let kind: Result.Kind = visible ? (wasLive ? .updated : .inserted) : .removed
        results.append(Result(kind: kind, collection: row.key.collection, id: row.key.id))
    }

    /// Writes the rows of the documents waiting for theirs, the store's and this transaction's
    /// (see `DeferredRows`): for a statement on the `document` table. Every later save in this
    /// transaction writes its row at once; the store forgets its waiting documents if this
    /// transaction commits.
    private func writeDeferredRows() throws {
        guard let waiting = store.deferredRows, !rowsWritten else { return }
        var documents = waiting.all.filter { deferredIndex[$0.key] == nil }
        documents += deferredIndex.values.sorted().map { deferred[$0] }
        try DeferredRows.write(documents, connection, store: store)
        rowsWritten = true
        deferred = []
        deferredIndex = [:]
    }

    /// Runs `action` once this transaction has committed, on the writer, in commit order, after
    /// the store has taken in its documents and events (`Store.write`); never if it rolls back.
    /// (GRDB's `afterNextTransaction` registers a transaction observer, which GRDB then tells of
    /// every statement the transaction runs: 1.5% of a trace's replay, for the observers' one.)
    func afterCommit(_ action: @escaping () -> Void) {
        committedActions.append(action)
    }

    /// Once this transaction has committed: the documents it left to wait join the store's,
    /// or, if it wrote the rows, none wait any more.
    func committed() {
        guard let waiting = store.deferredRows else { return }
        if rowsWritten { waiting.removeAll() } else { waiting.commit(deferred) }
    }

    /// Keeps what a merge into `key` resolved concurrently (see `FieldConflicts`).
    func recordConflicts(_ judgement: FieldConflicts.Judgement, of key: DocumentKey, seen: VersionVector) throws {
        guard !judgement.isEmpty else { return }
        let kept = keptLosers(key)
        let now = try FieldConflicts.apply(judgement, to: kept, of: key, seen: seen, bound: store.conflictsPerField, connection)
        if now != kept { conflictsChanged[key] = now }
    }

    /// The kept losers of `key`'s document, as this transaction left them so far.
    func keptLosers(_ key: DocumentKey) -> [FieldConflicts.KeptLoser] {
        conflictsChanged[key] ?? store.conflictIndex.losers(of: key)
    }

    /// Before commit: checkpoints the version vector when it must (see `SiteVersions`), and
    /// arranges for observers to hear of the changes once (and only if) the commit succeeds —
    /// on the writer, so in commit order.
    func finish() throws {
        if !changes.isEmpty { try store.hooks.run(self, changes) }
        // Past the limit, the rows are written with this commit.
        if !deferred.isEmpty, let waiting = store.deferredRows, waiting.count + deferred.count > waiting.limit { try writeDeferredRows() }
        if !conflictsChanged.isEmpty {
            let index = store.conflictIndex, changed = conflictsChanged
            afterCommit { for (key, losers) in changed { index.set(losers, of: key) } }
        }
        try store.persistWallClockMarkIfDue(self)
        let site = store.site
        let merged = versionAdded.elements.contains { $0.site != site }
        let sequence = store.changeSequence
        if evicted || merged || (!versionAdded.isEmpty && sequence - store.checkpointedSequence >= SiteVersions.checkpointInterval) {
            try SiteVersions.checkpoint(store.version.union(versionAdded), through: sequence, connection)
            checkpoint = sequence
        }
        guard !changes.isEmpty else { return }
        // Observers register on the writer, so none can appear between this check and the commit.
        let observers = store.observers, listeners = store.listeners, virtualObservers = store.virtualObservers
        guard !observers.isEmpty || !listeners.isEmpty || !virtualObservers.isEmpty else { return }
        let changes = self.changes
        afterCommit {
            if !observers.isEmpty { observers.committed(changes) }
            listeners.committed(changes)
            // system:collections and system:system_info count documents; the agent's rows
            // carry when a peer last sent some.
            virtualObservers.changed()
        }
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
        let store = self.store, connection = self.connection
        afterCommit { store.indexes.withLock { $0 = (try? FieldIndex.all(connection)) ?? $0 } }
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

extension DocumentKey {
    /// The `_id` as stored: its canonical JSON, so string and object ids never collide.
    var storageID: String { id.jsonString }
}
