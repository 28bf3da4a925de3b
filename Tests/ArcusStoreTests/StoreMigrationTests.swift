import ArcusCodec
import ArcusCRDT
import Foundation
import GRDB
import Testing
@testable import ArcusStore

@Suite("Schema migrations")
struct StoreMigrationTests {
    @Test("a v2 store opens as v3: documents, change-log positions and field indexes survive")
    func fromV2() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-migration-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)

        // A store as v2 left it: seq a plain column with its own index.
        let site = SiteID(rawValue: 0x1234)
        do {
            let queue = try DatabaseQueue(path: directory.appendingPathComponent("store.sqlite").path)
            try StoreSchema.migrator.migrate(queue, upTo: "v2")
            try queue.write { db in
                try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('site', ?)", arguments: [Int64(bitPattern: site.rawValue)])
                for (n, color) in ["red", "blue", "blue"].enumerated() {
                    var state = DocumentState()
                    let stamp = Stamp(time: Timestamp(milliseconds: 1_000 + UInt64(n)), site: site)
                    state.upsert(["color": .string(color), "n": .int(Int64(n))], at: stamp)
                    var context = EncodingContext()
                    var writer = ByteWriter()
                    context.writeDocument(state, to: &writer)
                    let id = Value.string("car\(n)")
                    try db.execute(sql: "INSERT INTO document (collection, id, state, json, seq) VALUES ('cars', ?, ?, ?, ?)",
                                   arguments: [id.jsonString, Data(writer.bytes), state.visibleJSON(adding: ("_id", id)), 10 * (n + 1)])
                    try db.execute(sql: "INSERT OR REPLACE INTO site_version (site, time) VALUES (?, ?)",
                                   arguments: [Int64(bitPattern: site.rawValue), Int64(stamp.time.rawValue)])
                }
                try FieldIndex(name: "cars_color", collection: "cars", paths: [FieldPath(["color"])]).create(db)
            }
        }

        let store = try Store(directory: directory)
        #expect(store.site == site)
        #expect(store.changeSequence == 30, "the change log continues where v2 left it")
        let blue = try store.execute("SELECT * FROM cars WHERE color = 'blue' ORDER BY n")
        #expect(blue.items.compactMap { $0[path: FieldPath(["_id"])]?.stringValue } == ["car1", "car2"])
        #expect(store.fieldIndexes.map(\.name) == ["cars_color"])
        let plan = try store.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT id FROM document WHERE collection = 'cars' AND json_extract(json, '$.\"color\"') = 'blue'")
                .map { $0["detail"] as String }.joined(separator: "; ")
        }
        #expect(plan.contains("arcus_index_cars_color"), "\(plan)")

        // Writing goes on from there, and the change log reads in order.
        try store.collection("cars").upsert(["_id": "car0", "color": "green"])
        #expect(store.changeSequence == 31)
        #expect(try store.changes(after: 0, since: .empty).batch.documents.count == 3)
        #expect(Set(try store.changes(after: 20, since: .empty).batch.documents.map(\.key.id)) == [.string("car2"), .string("car0")])
        #expect(try store.changes(after: 30, since: .empty).batch.documents.map(\.key.id) == [.string("car0")])
    }

    @Test("a store a newer build migrated is refused, saying why and what to do, and is left as it was")
    func newerSchemaRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-migration-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try Store(directory: directory)
            try store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'a', 'n': 1})")
        }
        // What a later build's migration would leave.
        do {
            let queue = try DatabaseQueue(path: directory.appendingPathComponent("store.sqlite").path)
            try queue.write { db in try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99-from-the-future')") }
        }
        // Its tables, as a plain connection reads them.
        func contents() throws -> [[DatabaseValue]] {
            let queue = try DatabaseQueue(path: directory.appendingPathComponent("store.sqlite").path)
            return try queue.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM document ORDER BY seq").map { Array($0.databaseValues) }
                    + Row.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier").map { Array($0.databaseValues) }
            }
        }
        let before = try contents()
        let error = try #require(throws: StoreError.self) { try Store(directory: directory) }
        guard case .newerSchema(_, let unknown) = error else {
            Issue.record("expected newerSchema, got \(error)")
            return
        }
        #expect(unknown == ["v99-from-the-future"])
        #expect(error.description.contains("newer version of Arcus") && error.description.contains("run that version"), "\(error)")
        #expect(try contents() == before, "the refused store is left as it was")

        // The build that knows the change opens it.
        do {
            let queue = try DatabaseQueue(path: directory.appendingPathComponent("store.sqlite").path)
            try queue.write { db in try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v99-from-the-future'") }
        }
        let store = try Store(directory: directory)
        #expect(try store.execute("SELECT n FROM cars").items == [["n": .int(1)]])
    }
}
