import ArcusCRDT
import Foundation
import GRDB
import Testing
@testable import ArcusStore

/// A filtered COUNT(*) that an index can answer is counted in SQL, without reading documents,
/// and gives exactly what reading them gives.
@Suite("COUNT through a field index")
struct AggregateIndexTests {
    func plan(_ store: Store, _ statement: String) throws -> String? {
        guard case .select(let select) = try DQLParser.parse(statement) else { return nil }
        let indexes = store.fieldIndexes
        return try store.read { db in
            try QueryPlanner(db: db, indexes: indexes).countPlan(collection: select.collection, where: select.whereClause)?.description
        }
    }

    @Test("the planner counts by index where SQL equality is DQL's, and reads documents elsewhere")
    func plans() throws {
        let t = try TemporaryStore()
        try t.store.execute("CREATE INDEX cars_make ON cars (make)")
        #expect(try plan(t.store, "SELECT COUNT(*) FROM cars WHERE make = 'ford'") == "count by index cars_make")
        #expect(try plan(t.store, "SELECT COUNT(*) FROM cars WHERE make IN ('ford', 2)") == "count by index cars_make")
        #expect(try plan(t.store, "SELECT COUNT(*) FROM cars") == "count of the collection")
        #expect(try plan(t.store, "SELECT COUNT(*) FROM cars WHERE make = NULL") == "count of nothing")
        // A date compares as an instant, booleans as 1 and 0 in SQL, a second condition needs the document.
        #expect(try plan(t.store, "SELECT COUNT(*) FROM cars WHERE make = '2026-01-01'") == nil)
        #expect(try plan(t.store, "SELECT COUNT(*) FROM cars WHERE make = TRUE") == nil)
        #expect(try plan(t.store, "SELECT COUNT(*) FROM cars WHERE make = 'ford' AND year > 1") == nil)
        #expect(try plan(t.store, "SELECT COUNT(*) FROM cars WHERE year = 1") == nil)
        #expect(try plan(t.store, "SELECT COUNT(*) FROM boats WHERE make = 'ford'") == nil)
    }

    @Test("randomised: counts by index equal counts by reading, over values of every kind")
    func sameCounts() throws {
        let seed = ProcessInfo.processInfo.environment["ARCUS_TEST_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        print("AggregateIndexTests.sameCounts seed \(seed) (replay with ARCUS_TEST_SEED=\(seed))")
        var random = DQLRandom(seed: seed)
        let kinds: [Value] = ["ford", "kia", "1", 1, 1.0, 2, 2.5, true, false, .null, ["ford"], ["make": "ford"], "[\"ford\"]", "2026-01-01"]
        let indexed = try TemporaryStore()
        let plain = try TemporaryStore()
        try indexed.store.execute("CREATE INDEX m ON cars (make)")
        for i in 0..<150 {
            var fields: [String: Value] = ["_id": .string("d\(i)")]
            let pick = Int.random(in: 0...kinds.count, using: &random)
            if pick < kinds.count { fields["make"] = kinds[pick] }
            for t in [indexed, plain] { try t.store.execute("INSERT INTO cars DOCUMENTS (:d)", arguments: ["d": .object(fields)]) }
        }
        if Bool.random(using: &random) {
            for t in [indexed, plain] { try t.store.execute("DELETE FROM cars WHERE _id IN ('d1', 'd2', 'd3')") }
        }
        let conditions = ["make = 'ford'", "make = 1", "make = 1.0", "make IN ('kia', 2, 2.5)", "make = '1'", "'ford' = make",
                          "make IN (:a, :b)", "make = '[\"ford\"]'", "make IN ('nothing')", "make = NULL"]
        for condition in conditions {
            let statement = "SELECT COUNT(*) AS n FROM cars WHERE \(condition)"
            let arguments: [String: Value] = ["a": "ford", "b": 1]
            let counted = try indexed.store.execute(statement, arguments: arguments).items
            let read = try plain.store.execute(statement, arguments: arguments).items
            #expect(counted == read, "\(condition), seed \(seed)")
        }
        #expect(try indexed.store.execute("SELECT COUNT(*) AS n FROM cars").items == plain.store.execute("SELECT COUNT(*) AS n FROM cars").items)
    }

    @Test("GROUP BY one field with only COUNT(*) is counted per key in SQL; other groupings read documents")
    func plansPerKey() throws {
        let t = try TemporaryStore()
        try t.store.execute("CREATE INDEX cars_make ON cars (make)")
        func counting(_ statement: String) throws -> String? {
            guard case .select(let select) = try DQLParser.parse(statement), let grouping = try DQLGrouping(select) else { return nil }
            let indexes = t.store.fieldIndexes
            return try t.store.read { db in try QueryPlanner(db: db, indexes: indexes).countingPlan(select, grouping)?.description }
        }
        #expect(try counting("SELECT color, COUNT(*) AS n FROM cars GROUP BY color") == "count per color (count of the collection)")
        #expect(try counting("SELECT color, COUNT(*) AS n FROM cars WHERE make = 'ford' GROUP BY color") == "count per color (count by index cars_make)")
        #expect(try counting("SELECT DISTINCT color FROM cars") == "count per color (count of the collection)")
        #expect(try counting("SELECT color, COUNT(*) AS n FROM cars WHERE year > 1 GROUP BY color") == nil)
        #expect(try counting("SELECT color, COUNT(color) AS n FROM cars GROUP BY color") == nil)
        #expect(try counting("SELECT color, make, COUNT(*) AS n FROM cars GROUP BY color, make") == nil)
        #expect(try counting("SELECT a[0], COUNT(*) AS n FROM cars GROUP BY a[0]") == nil)
        let explained = try t.store.execute("EXPLAIN SELECT color, COUNT(*) AS n FROM cars GROUP BY color").items.first
        #expect(explained?[path: ["access", "type"]] == "count_per_field")
        #expect(explained?[path: ["counted_without_reading_documents"]] == true)
    }

    @Test("randomised: counts per GROUP BY key in SQL equal grouping the documents read, and values SQL groups otherwise fall back to reading",
          arguments: ["plain", "mixed"])
    func samePerKeyCounts(values: String) throws {
        let seed = ProcessInfo.processInfo.environment["ARCUS_TEST_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        print("AggregateIndexTests.samePerKeyCounts(\(values)) seed \(seed) (replay with ARCUS_TEST_SEED=\(seed))")
        var random = DQLRandom(seed: seed)
        // Plain: what SQL groups as DQL does. Mixed adds booleans (1 and 0 to SQL), arrays and
        // objects (JSON text), 1 beside 1.0, and a date.
        var kinds: [Value] = ["ford", "kia", "Ford", "1", 1, 2, 3.5, -7, .null, "ünï", "[\"ford\"]"]
        if values == "mixed" { kinds += [true, false, 1.0, ["ford"], ["make": "ford"], "2026-01-01"] }
        let t = try TemporaryStore()
        if Bool.random(using: &random) { try t.store.execute("CREATE INDEX m ON cars (make)") }
        try t.store.execute("CREATE INDEX c ON cars (color)")
        for i in 0..<200 {
            var fields: [String: Value] = ["_id": .string("d\(i)"), "color": .string(["red", "blue"][i % 2])]
            let pick = Int.random(in: 0...kinds.count, using: &random)
            if pick < kinds.count { fields["make"] = kinds[pick] }
            try t.store.execute("INSERT INTO cars DOCUMENTS (:d)", arguments: ["d": .object(fields)])
        }
        if Bool.random(using: &random) { try t.store.execute("DELETE FROM cars WHERE _id IN ('d1', 'd2', 'd3')") }
        for condition in ["", " WHERE color = 'red'", " WHERE color IN ('blue', 'green')", " WHERE color = NULL"] {
            // COUNT(_id) counts the same documents, but only by reading them.
            let counted = try t.store.execute("SELECT make, COUNT(*) AS n FROM cars\(condition) GROUP BY make").items
            let read = try t.store.execute("SELECT make, COUNT(_id) AS n FROM cars\(condition) GROUP BY make").items
            #expect(counted == read, "\(condition), seed \(seed)")
            let distinct = try t.store.execute("SELECT DISTINCT make FROM cars\(condition)").items
            #expect(distinct == read.map { row in .object(["make": row[path: ["make"]] ?? .null]) }, "\(condition), seed \(seed)")
            if values == "plain" {
                let profile = try t.store.execute("PROFILE SELECT make, COUNT(*) AS n FROM cars\(condition) GROUP BY make").items.first
                #expect(profile?[path: ["actual_rows", "documents_read"]] == 0, "\(condition), seed \(seed)")
            }
        }
    }

    @Test("a field index leads with the collection, so a counted equality is answered by the index alone; a store whose indexes predate that gets them rebuilt")
    func countsFromTheIndexAlone() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-index-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("store.sqlite").path
        // A store as v6 made it: the index on the field alone.
        do {
            let queue = try DatabaseQueue(path: path)
            try StoreSchema.migrator.migrate(queue, upTo: "v6")
            try queue.write { db in
                try db.execute(sql: "CREATE INDEX arcus_index_cars_make ON document (json_extract(json, '$.\"make\"'))")
                try db.execute(sql: "INSERT INTO field_index (name, collection, paths) VALUES ('cars_make', 'cars', '[[\"make\"]]')")
            }
        }
        let store = try Store(directory: directory)
        for (i, make) in ["ford", "kia", "ford"].enumerated() {
            try store.execute("INSERT INTO cars DOCUMENTS (:d)", arguments: ["d": ["_id": .string("c\(i)"), "make": .string(make)]])
        }
        let columns = try store.read { db in try Optional<String>.fetchAll(db, sql: "SELECT name FROM pragma_index_info('arcus_index_cars_make') ORDER BY seqno") }
        #expect(columns.first == "collection", "\(columns)")
        guard case .select(let select) = try DQLParser.parse("SELECT COUNT(*) FROM cars WHERE make = 'ford'") else { return }
        let indexes = store.fieldIndexes
        let plan = try store.read { db in
            let count = try QueryPlanner(db: db, indexes: indexes).countPlan(collection: select.collection, where: select.whereClause)
            return try count.map { try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + $0.sql, arguments: $0.arguments).map { $0["detail"] as String } } ?? []
        }
        // Both terms answered by the index: SQLite then never seeks the row (its deferred seek
        // waits for a column it needs, and COUNT(*) needs none).
        #expect(plan.contains { $0.contains("USING INDEX arcus_index_cars_make (collection=? AND <expr>=?)") }, "\(plan)")
        #expect(try store.execute("SELECT COUNT(*) AS n FROM cars WHERE make = 'ford'").items == [["n": 2]])
    }
}
