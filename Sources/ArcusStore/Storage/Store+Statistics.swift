import GRDB

extension Store {
    /// How many live documents each collection holds, by name. Removed documents keep their
    /// row (so that the removal syncs) and are not counted; evicted ones are gone.
    public func documentCounts() throws -> [String: Int] {
        try read { db in try Self.documentCounts(db) }
    }

    static func documentCounts(_ db: Database) throws -> [String: Int] {
        let rows = try Row.fetchAll(db, sql: "SELECT collection, count(*) FROM document WHERE json IS NOT NULL GROUP BY collection")
        return Dictionary(uniqueKeysWithValues: rows.map { (($0[0] as String), ($0[1] as Int)) })
    }
}
