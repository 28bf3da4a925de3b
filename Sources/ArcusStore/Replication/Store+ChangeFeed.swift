import ArcusCRDT
import GRDB
import Synchronization

/// One document as the change log holds it.
public struct LoggedDocument: Sendable {
    public var key: DocumentKey
    public var state: DocumentState
    /// Its position in the change log: its latest change.
    public var sequence: Int64
    /// The bytes its row takes in the store (what `Store.backlog` adds up).
    public var storedBytes: Int64 = 0

    /// The document as readers see it, `_id` included; nil when removed.
    public var value: Value? { DocumentRows.visibleValue(state, id: key.id) }
}

/// A stretch of the change log.
public struct ChangedDocuments: Sendable {
    /// The documents changed after the position asked for, in log order.
    public var documents: [LoggedDocument]
    /// The position after the last of them: ask from here next time.
    public var position: Int64
    /// Whether they reach the end of the log as it was read.
    public var isComplete: Bool
    /// The store's version vector, read before the documents (so they hold every event it
    /// names; a commit in between only makes it name less).
    public var version: VersionVector
}

extension Store {
    /// The documents changed after `position`, at most `limit` of them, optionally of one
    /// collection only. Reads a range of the log (an index range), never the whole store.
    public func changedDocuments(after position: Int64, limit: Int, collection: String? = nil) throws -> ChangedDocuments {
        precondition(limit > 0, "limit must be positive")
        let version = self.version
        return try readWithoutRows { db in
            let rows = try changedRows(after: position, limit: limit, collection: collection, db)
            guard let deferredRows, !deferredRows.isEmpty else {
                return ChangedDocuments(documents: rows.documents, position: rows.position, isComplete: !rows.more, version: version)
            }
            // A document waiting for its row changed after its row was written: the row is
            // an earlier change, passed over.
            let waiting = deferredRows.changed(after: position, limit: limit, collection: collection)
            var documents = rows.documents.filter { !deferredRows.holds($0.key) }
            documents.append(contentsOf: waiting.documents)
            documents.sort { $0.sequence < $1.sequence }
            // Each part is complete up to its last document, when it stopped at the limit.
            var bound = Int64.max
            if rows.more { bound = rows.position }
            if waiting.more, let last = waiting.documents.last { bound = min(bound, last.sequence) }
            documents.removeAll { $0.sequence > bound }
            var more = bound != .max
            var last = more ? bound : max(rows.position, deferredRows.lastPosition ?? position)
            if documents.count > limit {
                documents.removeLast(documents.count - limit)
                more = true
                last = documents[documents.count - 1].sequence
            }
            return ChangedDocuments(documents: documents, position: last, isComplete: !more, version: version)
        }
    }

    /// `changedDocuments` as the rows have it: the documents, the position after the last, and
    /// whether more follow.
    private func changedRows(after position: Int64, limit: Int, collection: String?, _ db: Database) throws
        -> (documents: [LoggedDocument], position: Int64, more: Bool) {
        let sql = collection == nil
            ? "SELECT collection, id, state, json, seq, \(Self.storedBytesSQL) FROM document WHERE seq > ? ORDER BY seq LIMIT ?"
            : "SELECT collection, id, state, json, seq, \(Self.storedBytesSQL) FROM document WHERE seq > ? AND collection = ? ORDER BY seq LIMIT ?"
        var arguments: StatementArguments = [position]
        if let collection { arguments += [collection] }
        arguments += [limit == .max ? -1 : limit + 1]  // -1: no limit
        let rows = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: arguments)
        var documents: [LoggedDocument] = []
        var last = position
        var more = false
        while let row = try rows.next() {
            guard documents.count < limit else { more = true; break }
            let collection: String = row[0], storedID: String = row[1]
            let key = DocumentKey(collection: collection, id: try Value(json: storedID))
            last = row[4]
            let storedBytes: Int64 = row[5]
            let state: DocumentState
            if let cached = stateCache.state(of: key, at: last) {
                state = cached
            } else {
                state = try DocumentRows.decode(row[2], json: row[3], key, site: site)
                stateCache.insert(state, of: key, at: last, storedBytes: Int(storedBytes), evicting: false)
            }
            documents.append(LoggedDocument(key: key, state: state, sequence: last, storedBytes: storedBytes))
        }
        // Filtered by collection, the log may end in other collections' changes.
        if !more, collection != nil { last = max(last, try Int64.fetchOne(db.cachedStatement(sql: Self.lastPositionSQL)) ?? last) }
        return (documents, last, more)
    }

    static let lastPositionSQL = "SELECT max(seq) FROM document"

    /// A row's bytes: its state and its JSON, whichever it keeps. (`length` of text counts
    /// characters, walking the string; of a blob it reads the stored size.)
    static let storedBytesSQL = "ifnull(length(state), 0) + ifnull(length(CAST(json AS BLOB)), 0)"

    /// The documents whose latest change lies after `position` and at or before `end`, and
    /// their bytes as stored: what a backfill over that stretch of the log has to go through.
    /// A document waiting for its row counts what `DeferredRows.estimatedBytes` says it will take.
    public func backlog(after position: Int64, through end: Int64, collection: String? = nil) throws -> (documents: Int, bytes: Int64) {
        guard end > position else { return (0, 0) }
        return try readWithoutRows { db in
            var arguments: StatementArguments = [position, end]
            if let collection { arguments += [collection] }
            let filter = "WHERE seq > ? AND seq <= ?" + (collection == nil ? "" : " AND collection = ?")
            guard let deferredRows, !deferredRows.isEmpty else {
                let sql = "SELECT count(*), ifnull(sum(\(Self.storedBytesSQL)), 0) FROM document " + filter
                guard let row = try Row.fetchOne(db.cachedStatement(sql: sql), arguments: arguments) else { return (0, 0) }
                return (row[0], row[1])
            }
            var documents = 0, bytes: Int64 = 0
            let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT collection, id, \(Self.storedBytesSQL) FROM document " + filter), arguments: arguments)
            while let row = try rows.next() {
                let key = DocumentKey(collection: row[0], id: try Value(json: row[1] as String))
                guard !deferredRows.holds(key) else { continue }
                documents += 1
                bytes += row[2] as Int64
            }
            let waiting = deferredRows.backlog(after: position, through: end, collection: collection)
            return (documents + waiting.documents, bytes + waiting.bytes)
        }
    }

    /// The position of the latest change in the log that a reader can see now. Unlike
    /// `changeSequence`, it is never the position of a transaction still under way (whose
    /// changes may yet appear below it) nor of an eviction (which leaves no row): every change
    /// at or before it can be read.
    public func lastLoggedPosition() throws -> Int64 {
        try readWithoutRows { db in
            let rows = try Int64.fetchOne(db.cachedStatement(sql: Self.lastPositionSQL)) ?? 0
            return max(rows, deferredRows?.lastPosition ?? 0)
        }
    }

    /// The documents at `keys` as the change log holds them, in the order given; keys with no
    /// row (never seen, or evicted) are left out. For a peer that asks for documents by key.
    public func loggedDocuments(_ keys: [DocumentKey]) throws -> [LoggedDocument] {
        try readWithoutRows { db in
            let statement = try db.cachedStatement(sql: "SELECT state, json, seq FROM document WHERE collection = ? AND id = ?")
            var documents: [LoggedDocument] = []
            for key in keys {
                if let waiting = deferredRows?.document(key) {
                    documents.append(LoggedDocument(key: key, state: waiting.state, sequence: waiting.sequence,
                                                    storedBytes: DeferredRows.estimatedBytes(waiting.state)))
                    continue
                }
                guard let row = try Row.fetchOne(statement, arguments: [key.collection, key.storageID]) else { continue }
                let state = try DocumentRows.decode(row[0], json: row[1], key, site: site)
                documents.append(LoggedDocument(key: key, state: state, sequence: row[2]))
            }
            return documents
        }
    }

    /// Calls `body` after each commit that changed documents, with what it changed, in commit
    /// order, on the thread that committed: hand the work to a queue or a task rather than
    /// doing it there. Stays registered until the listener is cancelled or deallocated.
    public func addChangeListener(_ body: @escaping @Sendable ([DocumentChange]) -> Void) -> ChangeListener {
        listeners.add(body)
    }

    /// Calls `body` inside every write transaction that changed documents, just before it
    /// commits, with its changes: what it writes (sync records, say) commits with them, and an
    /// error it throws rolls the whole transaction back. It must not start another write.
    public func addCommitHook(_ body: @escaping @Sendable (WriteTransaction, [DocumentChange]) throws -> Void) -> ChangeListener {
        hooks.add(body)
    }
}

/// A registered change listener.
public final class ChangeListener: Sendable {
    enum Registry: Sendable {
        case listeners(ChangeListeners)
        case hooks(CommitHooks)
    }

    private let id: UInt64
    private let registry: Registry

    init(id: UInt64, registry: Registry) {
        self.id = id
        self.registry = registry
    }

    public func cancel() {
        switch registry {
        case .listeners(let listeners): listeners.remove(id)
        case .hooks(let hooks): hooks.remove(id)
        }
    }

    deinit { cancel() }
}

final class ChangeListeners: Sendable {
    private let state = Mutex<(next: UInt64, bodies: [UInt64: @Sendable ([DocumentChange]) -> Void])>((1, [:]))

    func add(_ body: @escaping @Sendable ([DocumentChange]) -> Void) -> ChangeListener {
        let id = state.withLock { state in
            let id = state.next
            state.next += 1
            state.bodies[id] = body
            return id
        }
        return ChangeListener(id: id, registry: .listeners(self))
    }

    func remove(_ id: UInt64) { _ = state.withLock { $0.bodies.removeValue(forKey: id) } }

    var isEmpty: Bool { state.withLock { $0.bodies.isEmpty } }

    func committed(_ changes: [DocumentChange]) {
        let bodies = state.withLock { Array($0.bodies.values) }
        for body in bodies { body(changes) }
    }
}

final class CommitHooks: Sendable {
    private let state = Mutex<(next: UInt64, bodies: [UInt64: @Sendable (WriteTransaction, [DocumentChange]) throws -> Void])>((1, [:]))

    func add(_ body: @escaping @Sendable (WriteTransaction, [DocumentChange]) throws -> Void) -> ChangeListener {
        let id = state.withLock { state in
            let id = state.next
            state.next += 1
            state.bodies[id] = body
            return id
        }
        return ChangeListener(id: id, registry: .hooks(self))
    }

    func remove(_ id: UInt64) { _ = state.withLock { $0.bodies.removeValue(forKey: id) } }

    func run(_ transaction: WriteTransaction, _ changes: [DocumentChange]) throws {
        let bodies = state.withLock { Array($0.bodies.values) }
        for body in bodies { try body(transaction, changes) }
    }
}
