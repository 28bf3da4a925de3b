import CArcusSQLiteWAL
import GRDBSQLite

/// A transaction's write-ahead-log frames written to the log in one call.
///
/// SQLite writes each frame of the log as two calls (a 24-byte header, then the page), so a
/// commit of n pages made 2n `pwrite` calls, each through the file system's per-page write
/// path: 9% of a profile of the fleet 1 replay on the durable store. The shim (`CArcusSQLiteWAL`), a
/// VFS over SQLite's default one, gathers the calls that continue one another and writes them
/// when the commit frame is complete — before SQLite publishes the frames to readers in the WAL
/// index — or sooner, before anything reads, syncs, truncates or sizes the log. Syncs, locks,
/// the WAL index and every other file pass straight through, so a crash or a power cut finds
/// the log as the default VFS would have left it, and the same files fsynced in the same order.
///
/// Installed once per process, as the default VFS, before the first store opens.
enum WALWriteGathering {
    /// Why the shim could not be installed; `Store.init(directory:)` names the store around it.
    struct Refused: Error, CustomStringConvertible {
        let code: Int32
        var description: String { "SQLite refused the WAL-gathering VFS (result code \(code))" }
    }

    /// Registers the shim; idempotent. Throws if SQLite has no default VFS to wrap.
    static func install() throws {
        let code = arcus_wal_write_buffer_register()
        guard code == SQLITE_OK else { throw Refused(code: code) }
    }

    /// The writes SQLite asked for on write-ahead logs since the process started, and the writes
    /// made of them.
    static var statistics: (requested: Int64, written: Int64) {
        var requested: Int64 = 0, written: Int64 = 0
        arcus_wal_write_buffer_statistics(&requested, &written)
        return (requested, written)
    }
}
