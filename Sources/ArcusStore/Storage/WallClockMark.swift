import ArcusCRDT
import GRDB

/// The latest reading of this device's own wall clock the store has seen, kept across restarts
/// in `meta` (`wall_clock`, milliseconds since 1970).
///
/// A board without a real-time clock boots at 1970, or at the time it last saved
/// (fake-hwclock, systemd-timesyncd), until network time arrives. The bound on remote times
/// (`Store.latestAdmissibleTime`) counts from this mark as well as from the clock, so that such a
/// board does not refuse every peer's writes as "from the future" meanwhile. Only this device's
/// own readings raise it, never a time a peer sent: a peer cannot push it.
struct WallClockMark: Sendable {
    /// Persisting costs a row in the next commit's WAL pages; a few minutes' lag costs nothing
    /// next to a skew allowance of days.
    static let persistInterval: UInt64 = 5 * 60 * 1000

    /// The highest reading seen, and the highest persisted.
    private(set) var highest: UInt64
    private(set) var persisted: UInt64

    init(persisted: UInt64) {
        highest = persisted
        self.persisted = persisted
    }

    /// Reads `clock`, raising the mark; returns the mark.
    mutating func read(_ clock: HybridLogicalClock.PhysicalClock) -> UInt64 {
        highest = max(highest, clock())
        return highest
    }

    /// The mark to persist, when it has moved on by the interval since it last was.
    var due: UInt64? { highest >= persisted &+ Self.persistInterval ? highest : nil }

    mutating func didPersist(_ mark: UInt64) { persisted = max(persisted, mark) }

    static func load(_ db: Database) throws -> UInt64 {
        // Stored as the Int64 with the same bits, like the site.
        try Int64.fetchOne(db, sql: "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'wall_clock'").map { UInt64(bitPattern: $0) } ?? 0
    }

    static func save(_ mark: UInt64, _ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO meta (key, value) VALUES ('wall_clock', ?)
            ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE CAST(excluded.value AS INTEGER) > CAST(value AS INTEGER)
            """, arguments: [Int64(bitPattern: mark)])
    }
}
