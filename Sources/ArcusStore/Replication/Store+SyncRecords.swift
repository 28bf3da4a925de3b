import ArcusCRDT
import Foundation
import GRDB

/// Small records the sync engine keeps durable in the store it syncs (subscriptions, what each
/// peer has acknowledged), so that a reconnect or a restart resumes instead of starting over.
/// The store does not interpret them; writing them inside a write transaction makes them
/// commit, or roll back, with the documents they describe.
extension Store {
    /// The record under `key`, if any.
    public func syncRecord(_ key: String) throws -> [UInt8]? {
        try readWithoutRows { db in try Data.fetchOne(db.cachedStatement(sql: Self.syncRecordSQL), arguments: [key]).map(Array.init) }
    }

    /// Sessions read and write their records several times each (cached statements: parsing
    /// them was a sixth of an idle exchange's time).
    static let syncRecordSQL = "SELECT value FROM sync_record WHERE key = ?"

    /// Every record whose key starts with `prefix`, in key order.
    public func syncRecords(prefix: String) throws -> [(key: String, value: [UInt8])] {
        try readWithoutRows { db in try Self.syncRecords(prefix: prefix, db) }
    }

    static func syncRecords(prefix: String, _ db: Database) throws -> [(key: String, value: [UInt8])] {
        try Row.fetchAll(db, sql: "SELECT key, value FROM sync_record WHERE key >= ? AND key < ? ORDER BY key",
                         arguments: [prefix, prefix + "\u{10FFFF}"])
            .map { ($0[0], Array($0[1] as Data)) }
    }

    /// Sets (or with nil, removes) one record in a transaction of its own.
    public func setSyncRecord(_ key: String, _ value: [UInt8]?) throws {
        try write { tx in try tx.setSyncRecord(key, value) }
    }
}

extension WriteTransaction {
    /// The record under `key` as this transaction sees it.
    public func syncRecord(_ key: String) throws -> [UInt8]? {
        try Data.fetchOne(connection.cachedStatement(sql: Store.syncRecordSQL), arguments: [key]).map(Array.init)
    }

    /// Sets (or with nil, removes) one sync record, committed with this transaction.
    public func setSyncRecord(_ key: String, _ value: [UInt8]?) throws {
        if let value {
            try connection.cachedStatement(sql: "INSERT INTO sync_record (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
                .execute(arguments: [key, Data(value)])
        } else {
            try connection.cachedStatement(sql: "DELETE FROM sync_record WHERE key = ?").execute(arguments: [key])
        }
    }
}
