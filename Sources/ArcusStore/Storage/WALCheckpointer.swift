import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// Copies the store's write-ahead log into the database file on a thread of its own, so that
/// no commit waits for it.
///
/// Left to itself, SQLite checkpoints inside the commit that takes the log past 1,000 pages
/// (`wal_autocheckpoint`): that commit copies the log into the database file and fsyncs both
/// before `write` returns. On this machine that was an eighth of a trace replay on the SQLite
/// store; on a Pi's SD card it holds a write for two fsyncs. Instead the writer connection's WAL
/// hook (which replaces SQLite's automatic checkpoint) hands the work to a connection of the
/// checkpointer's own, which checkpoints PASSIVE — never waiting for the writer or readers —
/// once for every `interval` pages the log grows, one at a time.
///
/// The log starts again from its beginning only when a write begins with all of it copied. A
/// writer that never pauses can keep the checkpointer from ever catching up, so past `limit`
/// pages the committing writer checkpoints itself, as SQLite would have: that bounds the log, and
/// by then most of it has been copied. What survives a crash or a power cut is unchanged: SQLite
/// fsyncs the same files in the same order whichever connection checkpoints.
final class WALCheckpointer: Sendable {
    /// Pages the log grows by between two checkpoints (SQLite's own default).
    static let interval: Int32 = 1_000
    /// Pages past which the committing writer checkpoints itself.
    static let limit: Int32 = 4_000

    /// What the checkpointer has done.
    struct Statistics: Sendable, Equatable {
        /// Checkpoints run on the checkpointer's connection.
        var background = 0
        /// Commits past `limit`, after each of which the writer tried a checkpoint of its own
        /// (busy, and left to the next, while another is under way).
        var inline = 0
    }

    private struct State {
        /// The log's size in pages when a checkpoint was last asked for; a smaller size means
        /// the log started again.
        var askedAt: Int32 = 0
        var running = false
        var closed = false
        var statistics = Statistics()
    }

    let connection: DatabaseQueue
    /// Where checkpoints run, one at a time (tests suspend it to hold them back).
    let queue = DispatchQueue(label: "arcus.wal-checkpoint", qos: .utility)
    private let state = Mutex(State())

    /// Opens the checkpointer's connection to the database at `path`, which must be in WAL mode.
    /// `synchronous` is the store's `PRAGMA synchronous`: a checkpoint fsyncs as the connection
    /// running it is set to.
    init(path: String, synchronous: Store.Options.Synchronous) throws {
        var configuration = Configuration()
        configuration.label = "arcus.wal-checkpoint"
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = \(synchronous.rawValue)") }
        connection = try DatabaseQueue(path: path, configuration: configuration)
    }

    var statistics: Statistics { state.withLock { $0.statistics } }

    /// Sets the checkpoints' `PRAGMA synchronous` when the store's changes (`Store.setSynchronous`),
    /// after any checkpoint under way.
    func setSynchronous(_ synchronous: Store.Options.Synchronous) throws {
        try connection.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = \(synchronous.rawValue)") }
    }

    /// Takes over checkpointing from SQLite on the writer's connection `db`. The checkpointer
    /// must outlive the connection's commits: the store that owns both calls `uninstall` before
    /// it closes the writer, and nothing commits once the store is gone.
    func install(on db: Database) {
        sqlite3_wal_hook(db.sqliteConnection, { context, connection, name, pages in
            guard let context else { return SQLITE_OK }
            Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue().committed(pages: pages, connection: connection, name: name)
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Gives checkpointing back to SQLite on `db`.
    func uninstall(from db: Database) {
        sqlite3_wal_hook(db.sqliteConnection, nil, nil)
        sqlite3_wal_autocheckpoint(db.sqliteConnection, Self.interval)
    }

    /// Called by SQLite on the writer, after each commit, with the log's size in pages.
    private func committed(pages: Int32, connection: OpaquePointer?, name: UnsafePointer<CChar>?) {
        enum Action { case none, background, inline }
        let action: Action = state.withLock { state in
            if pages < state.askedAt { state.askedAt = 0 }
            if pages >= Self.limit {
                state.statistics.inline += 1
                return .inline
            }
            guard !state.closed, !state.running, pages - state.askedAt >= Self.interval else { return .none }
            state.askedAt = pages
            state.running = true
            return .background
        }
        switch action {
        case .none: break
        case .inline:
            // As SQLite's automatic checkpoint does; a checkpoint under way elsewhere makes it
            // return busy, and the next commit tries again.
            _ = sqlite3_wal_checkpoint_v2(connection, name, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        case .background:
            queue.async { self.checkpoint() }
        }
    }

    private func checkpoint() {
        // Busy (another checkpoint under way) and errors leave the work to a later one.
        _ = try? connection.writeWithoutTransaction { db in try db.checkpoint(.passive) }
        state.withLock { state in
            state.running = false
            state.statistics.background += 1
        }
    }

    /// Waits for a checkpoint under way, then closes the checkpointer's connection.
    func close() throws {
        state.withLock { $0.closed = true }
        queue.sync {}
        try connection.close()
    }

    /// Returns once no checkpoint is under way or asked for.
    func waitUntilIdle() { queue.sync {} }
}
