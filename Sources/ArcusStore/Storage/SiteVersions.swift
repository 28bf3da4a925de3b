import ArcusCRDT
import GRDB

/// The `site_version` table: the store's version vector, one row per site.
///
/// Writing it on every commit would cost a single-document transaction a third page in the WAL,
/// so local writes only checkpoint it now and then (`meta.version_seq` says up to which
/// change-log position it is complete). Nothing is lost in between: every document changed
/// after the checkpoint is still in the log, and its state's version vector names the local
/// events it took in, so opening the store recovers them (`recover`). Merged vectors from peers
/// and evictions (which delete rows the recovery would need) checkpoint at once.
enum SiteVersions {
    /// Local writes between checkpoints, counted in change-log positions: what opening a store
    /// after a crash decodes at most.
    static let checkpointInterval: Int64 = 1000

    static func read(_ db: Database) throws -> VersionVector {
        var version = VersionVector()
        // Both columns hold 64-bit patterns as SQLite's signed integers.
        for row in try Row.fetchAll(db, sql: "SELECT site, time FROM site_version") {
            let site = SiteID(UInt64(bitPattern: row[0] as Int64))
            version.observe(Stamp(time: Timestamp(rawValue: UInt64(bitPattern: row[1] as Int64)), site: site))
        }
        return version
    }

    /// Raises each site's row to at least the time in `version`, and records that the table is
    /// complete up to change-log position `sequence`.
    static func checkpoint(_ version: VersionVector, through sequence: Int64, _ db: Database) throws {
        let statement = try db.cachedStatement(sql: """
            INSERT INTO site_version (site, time) VALUES (?, ?)
            ON CONFLICT (site) DO UPDATE SET time = excluded.time WHERE excluded.time > time
            """)
        for element in version.elements {
            // Unsigned order is what matters, and the bit patterns of times below 2^63 compare alike.
            try statement.execute(arguments: [Int64(bitPattern: element.site.rawValue), Int64(bitPattern: element.time.rawValue)])
        }
        try db.cachedStatement(sql: "INSERT INTO meta (key, value) VALUES ('version_seq', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
            .execute(arguments: [sequence])
    }

    /// Replaces the table by `version`, complete up to change-log position `sequence`: for a
    /// vector that must go down (recovering from a poisoned clock), which `checkpoint` never does.
    static func replace(_ version: VersionVector, through sequence: Int64, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM site_version")
        try checkpoint(version, through: sequence, db)
    }

    /// The change-log position the table is complete up to; nil for a new store, or one that
    /// wrote the table on every commit (before checkpoints), whose table is complete.
    static func checkpointSequence(_ db: Database) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'version_seq'")
    }

    /// The store's version vector at open: the table, plus the local events of the documents
    /// changed after its checkpoint; and the latest time any stored event carries, so that the
    /// clock restarts above every event the store holds, local or merged.
    static func recover(_ db: Database, site: SiteID) throws -> (version: VersionVector, latest: Timestamp) {
        var version = try read(db)
        var latest = version.maxTime
        guard let checkpoint = try checkpointSequence(db) else { return (version, latest) }
        let rows = try Row.fetchCursor(db, sql: "SELECT collection, id, state, json FROM document WHERE seq > ?", arguments: [checkpoint])
        while let row = try rows.next() {
            let key = DocumentKey(collection: row[0], id: try Value(json: row[1] as String))
            let state = try DocumentRows.decode(row[2], json: row[3], key, site: site)
            if let local = state.version[site] { version.observe(Stamp(time: local, site: site)) }
            latest = max(latest, state.version.maxTime)
        }
        return (version, latest)
    }
}
