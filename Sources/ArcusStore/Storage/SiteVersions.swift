import ArcusCRDT
import GRDB

/// The `site_version` table: the store's version vector, one row per site.
enum SiteVersions {
    static func read(_ db: Database) throws -> VersionVector {
        var version = VersionVector()
        // Both columns hold 64-bit patterns as SQLite's signed integers.
        for row in try Row.fetchAll(db, sql: "SELECT site, time FROM site_version") {
            let site = SiteID(UInt64(bitPattern: row[0] as Int64))
            version.observe(Stamp(time: Timestamp(rawValue: UInt64(bitPattern: row[1] as Int64)), site: site))
        }
        return version
    }

    /// Raises each site's row to at least the time in `added`.
    static func write(_ added: VersionVector, _ db: Database) throws {
        guard !added.isEmpty else { return }
        let statement = try db.cachedStatement(sql: """
            INSERT INTO site_version (site, time) VALUES (?, ?)
            ON CONFLICT (site) DO UPDATE SET time = excluded.time WHERE excluded.time > time
            """)
        for element in added.elements {
            // Unsigned order is what matters, and the bit patterns of times below 2^63 compare alike.
            try statement.execute(arguments: [Int64(bitPattern: element.site.rawValue), Int64(bitPattern: element.time.rawValue)])
        }
    }
}
