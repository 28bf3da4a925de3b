import ArcusCRDT
import Foundation
import GRDB
import Synchronization

/// The database every device runs: collections of CRDT documents in SQLite (WAL), queried and
/// changed with DQL or the builder API, observed, and merged with other replicas' deltas.
///
/// One store per data directory; a second process opening the same directory gets
/// `StoreError.dataDirectoryInUse`. Readers run concurrently; one writer at a time. All methods
/// may be called from any thread or task; they block the caller while SQLite works.
public final class Store: Sendable {
    /// The data directory, or nil for an in-memory store.
    public let directory: URL?
    /// This replica's site id, stable for the life of the data directory.
    public let site: SiteID
    let writer: any DatabaseWriter
    /// The writer, when it is a store in memory's single connection: reads go straight to it.
    private let memoryQueue: DatabaseQueue?
    /// Checkpoints the write-ahead log off the writer; nil in memory.
    let checkpointer: WALCheckpointer?
    private let lock: DataDirectoryLock?
    /// Whether `close` has run: every call after it throws `StoreError.closed`.
    private let isClosed = Atomic<Bool>(false)
    private let clock: Mutex<HybridLogicalClock>
    /// The change-log position of the latest change.
    private let sequence: Mutex<Int64>
    /// Every event in the store, per site, as of the last commit.
    private let versionVector: Mutex<VersionVector>
    /// The change-log position up to which `site_version` holds the version vector.
    private let versionCheckpoint: Mutex<Int64>
    let observers = ObserverRegistry()
    /// The `system:` collections (`registerVirtualCollection`).
    let virtualCollections = VirtualCollections()
    /// Observers of the `system:` collections, which read them again when they may have changed.
    let virtualObservers = VirtualObservers()
    /// What answers SHOW and ALTER SYSTEM (`registerSettings`); nil until a host registers it.
    let settings = Mutex<(any StoreSettings)?>(nil)
    let listeners = ChangeListeners()
    let hooks = CommitHooks()
    /// Whether commits acknowledged before this store was opened may be gone: the process
    /// before did not close it cleanly, and commits were not fsynced (`synchronous = NORMAL`),
    /// so a power cut may have taken the last of them. Peers hold them: sync asks for them back.
    public let mayHaveLostCommits: Bool
    /// This store's own latest event when it was opened (nil: none).
    public let ownTimeAtOpen: Timestamp?
    /// `withhold(_:)`: documents whose rows show nothing to readers for now.
    let withheldKeys = Mutex<Set<DocumentKey>>([])
    let indexes: Mutex<[FieldIndex]>
    /// Each collection's reaped horizon (`reapedHorizon(of:)`), as committed.
    let reapedHorizonCache: Mutex<[String: VersionVector]>
    let attachmentFiles: AttachmentFiles
    /// This device's wall clock (`Options.physicalClock`).
    let physicalClock: HybridLogicalClock.PhysicalClock
    /// What opening the store tightened to make its data directory private ("the data directory
    /// 755 → 700", "store.sqlite 644 → 600", …); empty when it already was, and in memory.
    public let accessChanges: [String]
    /// The highest reading of it kept (see `WallClockMark`).
    let wallClockMark: Mutex<WallClockMark>
    /// `Options.clockSkewAllowance`.
    let clockSkewAllowance: Duration
    private let clockRecovery = Mutex<ClockPoisoningRecovery?>(nil)
    /// `Options.conflictsPerField`: 0 when the store keeps no conflicts (and sync then neither
    /// asks for nor sends what the conflict view needs).
    public let conflictsPerField: Int
    /// The documents that keep conflicts (see `ConflictIndex`).
    let conflictIndex: ConflictIndex
    /// Whether reading the conflict view means anything: it is on, or conflicts kept while it
    /// was (by the agent, when `arcus exec --data` opens its directory without its settings).
    var conflictViewReadable: Bool { conflictsPerField > 0 || !conflictIndex.isEmpty }
    /// Used by writes only, so uncontended: one writer at a time.
    let stateEncoder = Mutex(StateEncoder())
    /// Decoded states of the rows read or written lately.
    let stateCache: DocumentStateCache
    /// In memory: the documents written whose rows wait until something reads the rows.
    let deferredRows: DeferredRows?

    public struct Options: Sendable {
        /// What a commit survives once `write` returns (`PRAGMA synchronous`; the store runs in WAL
        /// mode). `NORMAL` (default): every commit survives the process crashing or being killed
        /// (SIGKILL), since it is in the WAL file in the kernel's page cache, but the WAL is fsynced
        /// only at checkpoints, so a power cut may lose the last commits before it (those since the
        /// last checkpoint; the database stays consistent). `FULL`: the WAL is fsynced on every
        /// commit, before `write` returns, so an acknowledged commit survives power loss too, at
        /// the cost of one fsync per commit. Attachment blobs are fsynced with their directory
        /// either way (`DurableFiles`).
        public var synchronous: Synchronous = .normal
        /// Injectable wall clock (milliseconds since 1970), for tests and replays.
        public var physicalClock: HybridLogicalClock.PhysicalClock = HybridLogicalClock.wallClock
        /// The site this store's writes are stamped with; nil keeps the one the store has (a
        /// random one for a new store). An agent passes the site its identity key names, so
        /// that every peer can tell whose writes are whose from the writer's credential; a store
        /// made before that takes the new site for its later writes (its earlier ones keep theirs).
        public var site: SiteID? = nil
        /// How far ahead of this device's clock a remote event may be stamped and still be
        /// merged (see `latestAdmissibleTime`); default a week (`defaultClockSkewAllowance`).
        public var clockSkewAllowance: Duration = Store.defaultClockSkewAllowance
        /// The most memory documents kept decoded may take, so that reading one again (sync
        /// reads each changed document for every peer, a merge loads what it joins into) skips
        /// decoding it; 0 keeps none. Default 8 MiB.
        public var stateCacheBytes = 8 << 20
        /// How many concurrent values that lost a last-writer-wins merge the conflict view keeps
        /// per field (`conflicts(path)`, `system:conflicts`), the latest; 0 keeps none. Default 4.
        public var conflictsPerField = Store.defaultConflictsPerField
        /// In memory: how many changes may wait for their rows (`DeferredRows`). Tests lower it.
        var rowsWaitingLimit = DeferredRows.defaultLimit

        public enum Synchronous: String, Sendable { case normal = "NORMAL", full = "FULL" }

        public init() {}
    }

    /// Opens (creating if needed) the store in `directory`. The directory is made private to
    /// the user running this (0700, its files 0600; see `DataDirectoryAccess`), whatever the
    /// umask; `accessChanges` says what was tightened in a directory an earlier version made.
    public convenience init(directory: URL, options: Options = Options()) throws {
        let access = try DataDirectoryAccess(directory: directory)
        let lock = try DataDirectoryLock(directory: directory)
        try access.createDatabaseFile(named: "store.sqlite")
        var config = Configuration()
        config.label = "arcus"
        let synchronous = options.synchronous.rawValue
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
        }
        let pool: DatabasePool
        let checkpointer: WALCheckpointer
        do {
            try WALWriteGathering.install()
            let path = directory.appendingPathComponent("store.sqlite").path
            pool = try DatabasePool(path: path, configuration: config)
            checkpointer = try WALCheckpointer(path: path, synchronous: options.synchronous)
            // GRDB sets `synchronous = NORMAL` on a pool's writer when it turns WAL on, after
            // `prepareDatabase` ran: set it again on the writer, the connection that commits.
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
                checkpointer.install(on: db)
            }
        } catch {
            throw StoreError.cannotOpen(path: directory.path, reason: "\(error)")
        }
        try self.init(writer: pool, directory: directory, lock: lock, options: options, accessChanges: access.changes, checkpointer: checkpointer)
    }

    /// The `PRAGMA synchronous` level the writer's connection commits with (1 NORMAL, 2 FULL):
    /// what `Options.synchronous` asked for, read back from SQLite.
    public func synchronousLevel() throws -> Int {
        try writer.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    /// A store that lives in memory only (for tests and in-memory replays).
    public convenience init(inMemory options: Options = Options()) throws {
        try self.init(writer: try DatabaseQueue(), directory: nil, lock: nil, options: options)
    }

    private init(writer: any DatabaseWriter, directory: URL?, lock: DataDirectoryLock?, options: Options, accessChanges: [String] = [],
                 checkpointer: WALCheckpointer? = nil) throws {
        self.writer = writer
        self.checkpointer = checkpointer
        memoryQueue = writer as? DatabaseQueue
        deferredRows = directory == nil ? DeferredRows(limit: options.rowsWaitingLimit) : nil
        self.accessChanges = accessChanges
        stateCache = DocumentStateCache(capacity: options.stateCacheBytes)
        self.directory = directory
        self.lock = lock
        try writer.read { db in try StoreSchema.refuseNewer(db, path: directory?.path ?? ":memory:") }
        try StoreSchema.migrator.migrate(writer)
        let (site, version, latest, lastSequence, checkpoint, mark, checked) = try writer.write {
            db -> (SiteID, VersionVector, Timestamp, Int64, Int64, UInt64, Bool) in
            let site: SiteID
            // Stored as the Int64 with the same bits: SQLite integers are signed.
            let stored = try Int64.fetchOne(db, sql: "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'site'").map {
                SiteID(UInt64(bitPattern: $0))
            }
            site = options.site ?? stored ?? SiteID.random()
            if site != stored {
                if let stored {
                    // The version vector counts the old site's latest events from their documents
                    // (see SiteVersions.recover): complete it while the old site is still known.
                    let (version, _) = try SiteVersions.recover(db, site: stored)
                    try SiteVersions.checkpoint(version, through: try Int64.fetchOne(db, sql: "SELECT max(seq) FROM document") ?? 0, db)
                    try Self.resite(db, from: stored)
                    // Its writes under the old site stay this store's own: a clock repair
                    // re-does them rather than dropping them as another device's.
                    try db.execute(sql: "INSERT OR IGNORE INTO former_site (site) VALUES (?)", arguments: [Int64(bitPattern: stored.rawValue)])
                }
                try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('site', ?)", arguments: [Int64(bitPattern: site.rawValue)])
            }
            let mark = max(try WallClockMark.load(db), options.physicalClock())
            try WallClockMark.save(mark, db)
            // A new store has nothing stamped beyond any bound; an older one is checked once.
            if stored == nil { try ClockPoisoningRecovery.markChecked(db) }
            let checked = try ClockPoisoningRecovery.isChecked(db)
            let sequence = try Int64.fetchOne(db, sql: "SELECT max(seq) FROM document") ?? 0
            let (version, latest) = try SiteVersions.recover(db, site: site)
            guard let checkpoint = try SiteVersions.checkpointSequence(db) else {
                // A new store, or one that wrote its version vector on every commit: complete now.
                try SiteVersions.checkpoint(version, through: sequence, db)
                return (site, version, latest, sequence, sequence, mark, checked)
            }
            return (site, version, latest, sequence, checkpoint, mark, checked)
        }
        self.site = site
        indexes = Mutex(try writer.read { try FieldIndex.all($0) })
        reapedHorizonCache = Mutex(try writer.read { try Self.loadReapedHorizons($0) })
        conflictsPerField = max(0, options.conflictsPerField)
        conflictIndex = try writer.read { try ConflictIndex($0) }
        // Above every event stored, local or merged: stamps never repeat or go back after a restart.
        clock = Mutex(HybridLogicalClock(last: latest, physical: options.physicalClock))
        physicalClock = options.physicalClock
        wallClockMark = Mutex(WallClockMark(persisted: mark))
        clockSkewAllowance = options.clockSkewAllowance
        versionVector = Mutex(version)
        versionCheckpoint = Mutex(checkpoint)
        mayHaveLostCommits = options.synchronous == .normal && (lock?.heldUntilUncleanEnd ?? false)
        sequence = Mutex(lastSequence + (mayHaveLostCommits ? Self.positionsSkippedAfterLoss : 0))
        ownTimeAtOpen = version[site]
        attachmentFiles = AttachmentFiles(directory: directory?.appendingPathComponent("attachments"))
        // A store whose clock was poisoned (before remote times were bounded) gets well here.
        let recovery = try recoverFromClockPoisoning(latest: latest, scanDocuments: !checked)
        clockRecovery.withLock { $0 = recovery }
    }

    /// What opening the store did about events stamped beyond `latestAdmissibleTime` (see
    /// `ClockPoisoningRecovery`); nil when there were none. Worth a log line: the agent logs it.
    public var recoveredFromClockPoisoning: ClockPoisoningRecovery? { clockRecovery.withLock { $0 } }

    /// Before a store's site changes: documents stored as the creation time of one local write
    /// (their site implied by the store's) are stored whole, so they keep the site they were
    /// written with. Runs once, in the transaction that changes the site.
    private static func resite(_ db: Database, from old: SiteID) throws {
        var encoder = StateEncoder()
        let batch = "SELECT collection, id, state, json FROM document WHERE typeof(state) = 'integer' LIMIT 1000"
        // In batches, so a large store is not read into memory at once: each batch leaves the query.
        while case let rows = try Row.fetchAll(db, sql: batch), !rows.isEmpty {
            for row in rows {
                let key = DocumentKey(collection: row[0], id: try Value(json: row[1] as String))
                let state = try DocumentRows.decode(row[2], json: row[3], key, site: old)
                try encoder.encode(state) { bytes in
                    try db.execute(
                        sql: "UPDATE document SET state = ? WHERE collection = ? AND id = ?",
                        arguments: [Data(bytes), row[0] as String, row[1] as String]
                    )
                }
            }
        }
    }

    // MARK: - Clock and change log

    /// A fresh stamp for a local write. Throws only if the clock is at the last time there is,
    /// which a store's clock never reaches: it takes in no remote time beyond its bound.
    func stamp() throws(StoreError) -> Stamp {
        do {
            return Stamp(time: try clock.withLock { clock throws(HybridLogicalClock.Exhausted) in try clock.tick() }, site: site)
        } catch {
            throw StoreError.clockExhausted(last: error.last)
        }
    }

    /// Takes in a clock reading from a merged delta, unless it is later than `latest`.
    func observe(_ time: Timestamp, through latest: Timestamp) {
        clock.withLock { _ = $0.observe(time, through: latest) }
    }

    var lastTime: Timestamp { clock.withLock { $0.last } }

    /// Restarts the clock at `last` (recovering from a poisoned one).
    func restartClock(at last: Timestamp) {
        clock.withLock { $0 = HybridLogicalClock(last: last, physical: physicalClock) }
    }

    /// Replaces the in-memory version vector (recovering from a poisoned clock lowers it).
    func resetVersion(_ version: VersionVector) {
        versionVector.withLock { $0 = version }
    }

    /// A power cut can take the last commits (`mayHaveLostCommits`), and with them change-log
    /// positions that peers already acknowledged: reused for new changes, those would be skipped
    /// when a peer resumes from its acknowledgement. So such a store starts its positions past
    /// any it can have given out (gaps in the log are harmless).
    static let positionsSkippedAfterLoss: Int64 = 1 << 32

    func nextSequence() -> Int64 {
        sequence.withLock {
            $0 += 1
            return $0
        }
    }

    /// Takes back `sequence`, the position just handed out (`nextSequence`), when nothing was
    /// written at it. Only the writer hands out positions, so it is still the latest.
    func returnSequence(_ sequence: Int64) {
        self.sequence.withLock { if $0 == sequence { $0 -= 1 } }
    }

    /// The change-log position of the latest committed change.
    public var changeSequence: Int64 { sequence.withLock { $0 } }

    /// Every event this store holds, local or merged, per site.
    public var version: VersionVector { versionVector.withLock { $0 } }

    /// The change-log position up to which `site_version` is complete.
    var checkpointedSequence: Int64 { versionCheckpoint.withLock { $0 } }

    // MARK: - Transactions

    /// Runs `body` in one write transaction and commits it; if `body` throws, nothing it did is
    /// kept. Returns what each write did. Starting a write inside another throws
    /// `StoreError.nestedWriteTransaction` (it would otherwise deadlock).
    @discardableResult
    public func write(_ body: (WriteTransaction) throws -> Void) throws -> [WriteTransaction.Result] {
        guard !WriteMarker.isInsideWrite else { throw StoreError.nestedWriteTransaction }
        return try onOpenWriter { db in
            WriteMarker.enter()
            defer { WriteMarker.leave() }
            // One writer at a time: what the change log held before is still its latest position
            // if this transaction rolls back.
            let sequenceBefore = changeSequence
            do {
                let transaction = WriteTransaction(store: self, db: db)
                try db.inImmediateTransaction {
                    try body(transaction)
                    try transaction.finish()
                }
                transaction.committed()
                versionVector.withLock { $0.formUnion(transaction.versionAdded) }
                if let checkpoint = transaction.checkpoint { versionCheckpoint.withLock { $0 = checkpoint } }
                for action in transaction.committedActions { action() }
                return transaction.results
            } catch {
                // The positions it wrote at are given out again: states cached under them go.
                stateCache.removeAll()
                sequence.withLock { $0 = sequenceBefore }
                throw error
            }
        }
    }

    /// Runs `body` with read access to a consistent snapshot; readers do not block each other.
    /// A store in memory first writes the rows its documents wait for (`DeferredRows`).
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try readWithoutRows { db in
            try writeDeferredRows(db)
            return try body(db)
        }
    }

    /// `read`, for a reader of what the store keeps besides the `document` table (sync records,
    /// attachments' records and references, which every save keeps current), or that takes the
    /// documents whose rows wait into account itself (the change log).
    func readWithoutRows<T>(_ body: (Database) throws -> T) throws -> T {
        try checkOpen()
        // A store in memory has one connection, and every access to it waits its turn, so
        // nothing can write between the statements of a read: it needs no transaction of its
        // own (GRDB's `read` opens one, and parses its BEGIN and COMMIT each time).
        if let memoryQueue { return try memoryQueue.unsafeRead { db in try checkOpen(); return try body(db) } }
        // A pool's readers refuse every read once closed.
        return try writer.read(body)
    }

    /// Writes the rows of the documents a store in memory keeps waiting (`DeferredRows`), in a
    /// transaction of its own, for a reader of the `document` table. On the writer, outside
    /// any transaction.
    func writeDeferredRows(_ db: Database) throws {
        guard let deferredRows, !deferredRows.isEmpty else { return }
        do {
            try db.inTransaction {
                try DeferredRows.write(deferredRows.all, db, store: self)
                return .commit
            }
        } catch {
            stateCache.removeAll()
            throw error
        }
        deferredRows.removeAll()
    }

    /// Closes the store: its database connections, then its lock on the data directory, so that
    /// another store (in this process or another) can open the directory. A write in progress
    /// finishes first; every call after this throws `StoreError.closed`. Closing again does
    /// nothing. An agent closes its store when it stops.
    public func close() throws {
        guard !isClosed.load(ordering: .sequentiallyConsistent) else { return }
        // Marked in turn with the writes, so that none runs on the closed connection.
        let closing = try writer.writeWithoutTransaction { db in
            let closing = isClosed.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged
            if closing { checkpointer?.uninstall(from: db) }
            return closing
        }
        guard closing else { return }
        stateCache.removeAll()
        try writer.close()
        try checkpointer?.close()
        lock?.release()
    }

    func checkOpen() throws(StoreError) {
        if isClosed.load(ordering: .sequentiallyConsistent) { throw StoreError.closed }
    }

    /// Runs `body` on the writer connection, without a transaction, or throws
    /// `StoreError.closed`: GRDB says "out of memory" of a closed connection. Checked before
    /// waiting for the writer and again once it is ours, in turn with `close`, which may have
    /// run in between.
    func onOpenWriter<T>(_ body: (Database) throws -> T) throws -> T {
        try checkOpen()
        return try writer.writeWithoutTransaction { db in
            try checkOpen()
            return try body(db)
        }
    }

    /// Runs `body` in a write transaction of its own, for what the store keeps besides documents
    /// (attachments' records, settings).
    func writeRecords<T>(_ body: (Database) throws -> T) throws -> T {
        try onOpenWriter { db in try db.inImmediateTransaction { try body(db) } }
    }

    /// SQLite's own check of the database file (`PRAGMA integrity_check`): `["ok"]`, or one line
    /// per problem found.
    public func checkIntegrity() throws -> [String] {
        try read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
    }

    /// The default of `Options.conflictsPerField`: 0, the conflict view off. Keeping conflicts
    /// costs every sync an entry per document in both directions (what each side had seen of
    /// the other's writes) and every concurrent merge a row: measured on the shared fleet trace,
    /// 17% more bytes and 1.3× the replay time (Docs/Conflicts.md). Devices that want it say so.
    public static let defaultConflictsPerField = 0

    /// Field indexes, cached: the planner consults them on every query.
    var fieldIndexes: [FieldIndex] { indexes.withLock { $0 } }

}
