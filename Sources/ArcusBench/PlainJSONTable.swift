import ArcusAgent
import ArcusCRDT
import ArcusStore
import Foundation
import GRDB

/// The baseline of `arcus bench store`: what an app would do with SQLite alone — one table of
/// JSON text keyed by `_id`, in WAL mode with the store's synchronous setting (NORMAL, or FULL beside
/// a store opened with `.full`), through the same
/// SQLite and GRDB, with cached statements as a careful app would. Reads parse the JSON with
/// the same parser Arcus uses, so the comparison measures the store, not the parser.
final class PlainJSONTable {
    private let pool: DatabasePool

    init(path: String, synchronous: Store.Options.Synchronous = .normal) throws {
        var configuration = Configuration()
        let level = synchronous.rawValue
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = \(level)") }
        pool = try DatabasePool(path: path, configuration: configuration)
        // GRDB turns a pool's writer to NORMAL as it sets WAL up, after `prepareDatabase` (as the store does).
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = \(level)") }
        try pool.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS docs (id TEXT PRIMARY KEY NOT NULL, json TEXT NOT NULL)")
        }
    }

    func upsert(_ documents: ArraySlice<[String: Value]>) throws {
        try pool.write { db in
            let statement = try db.cachedStatement(
                sql: "INSERT INTO docs (id, json) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET json = excluded.json")
            for document in documents {
                guard case .string(let id)? = document["_id"] else { continue }
                try statement.execute(arguments: [id, Value.object(document).jsonString])
            }
        }
    }

    func document(id: String) throws -> Value? {
        try pool.read { db in
            try String.fetchOne(db.cachedStatement(sql: "SELECT json FROM docs WHERE id = ?"), arguments: [id]).map { try Value(json: $0) }
        }
    }

    func documents(where field: String, equals value: String) throws -> [Value] {
        try pool.read { db in
            try String.fetchAll(db.cachedStatement(sql: "SELECT json FROM docs WHERE json_extract(json, '$.\(field)') = ?"), arguments: [value])
                .map { try Value(json: $0) }
        }
    }

    func count(where field: String, equals value: String) throws -> Int {
        try pool.read { db in
            try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM docs WHERE json_extract(json, '$.\(field)') = ?"), arguments: [value]) ?? 0
        }
    }

    /// How many documents hold each value of `field` (nil: null or missing).
    func countPerValue(of field: String) throws -> [(value: String?, count: Int)] {
        try pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT json_extract(json, '$.\(field)') AS v, COUNT(*) FROM docs GROUP BY v"))
                .map { ($0[0], $0[1]) }
        }
    }

    func createIndex(on field: String) throws {
        try pool.write { db in
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS docs_\(field) ON docs (json_extract(json, '$.\(field)'))")
        }
    }
}
