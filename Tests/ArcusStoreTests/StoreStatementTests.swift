import ArcusCRDT
import Foundation
import GRDB
import Testing
@testable import ArcusStore

@Suite("DQL statements against a store")
struct StoreStatementTests {
    @Test("INSERT, SELECT with WHERE, ORDER BY, LIMIT and OFFSET, projections")
    func insertAndSelect() throws {
        let t = try TemporaryStore()
        let inserted = try t.store.execute("""
            INSERT INTO cars DOCUMENTS ({'_id': 'a', 'make': 'toyota', 'year': 2018, 'color': 'black', 'features': {'trim': 'standard'}}),
            ({'_id': 'b', 'make': 'honda', 'year': 2021, 'color': 'blue'}), (:doc)
            """, arguments: ["doc": ["_id": "c", "make": "ford", "year": 2015, "color": "blue"]])
        #expect(inserted.ids == ["a", "b", "c"])
        let blue = try t.store.execute("SELECT * FROM cars WHERE color = 'blue' ORDER BY year DESC")
        #expect(blue.items.compactMap { $0[path: ["_id"]]?.stringValue } == ["b", "c"])
        let page = try t.store.execute("SELECT make, features.trim FROM cars ORDER BY year LIMIT 2 OFFSET 1")
        #expect(page.items == [["make": "toyota", "trim": "standard"], ["make": "honda"]])
        #expect(try t.store.execute("SELECT * FROM cars WHERE features.trim = 'standard'").items.count == 1)
        #expect(try t.store.execute("SELECT * FROM cars WHERE year > :y AND make LIKE '%o%'", arguments: ["y": 2016]).items.count == 2)
        #expect(try t.store.execute("SELECT * FROM nothing_here").items.isEmpty)
    }

    @Test("plain INSERT of an existing _id is an error and writes nothing; ON ID CONFLICT decides")
    func insertConflicts() throws {
        let t = try TemporaryStore()
        try t.store.execute("INSERT INTO p DOCUMENTS ({'_id': 'x', 'n': 1})")
        #expect(throws: StoreError.self) {
            try t.store.execute("INSERT INTO p DOCUMENTS ({'_id': 'y', 'n': 2}), ({'_id': 'x', 'n': 3})")
        }
        #expect(try t.store.execute("SELECT * FROM p").items.count == 1, "the failed statement wrote nothing, not even y")
        try t.store.execute("INSERT INTO p DOCUMENTS ({'_id': 'x', 'n': 4, 'm': 1}) ON ID CONFLICT DO NOTHING")
        #expect(try t.store.collection("p").findByID("x").exec() == ["_id": "x", "n": 1])
        try t.store.execute("INSERT INTO p DOCUMENTS ({'_id': 'x', 'm': 5}) ON ID CONFLICT DO UPDATE")
        #expect(try t.store.collection("p").findByID("x").exec() == ["_id": "x", "n": 1, "m": 5])
    }

    @Test("a missing _id is generated; object ids work")
    func identities() throws {
        let t = try TemporaryStore()
        let result = try t.store.execute("INSERT INTO p DOCUMENTS ({'name': 'susan'})")
        let id = try #require(result.ids.first)
        #expect(id.count == 24)
        try t.store.execute("INSERT INTO p DOCUMENTS ({'_id': {'site': 'x', 'n': 1}, 'v': true})")
        #expect(try t.store.execute("SELECT * FROM p WHERE _id.site = 'x'").items.count == 1)
        #expect(try t.store.collection("p").findByID(["site": "x", "n": 1]).exec()?[path: ["v"]] == true)
    }

    @Test("UPDATE SET and UNSET change the matching documents only")
    func update() throws {
        let t = try TemporaryStore()
        try t.store.execute("INSERT INTO o DOCUMENTS ({'_id': '1', 'status': 'open', 'items': 2}), ({'_id': '2', 'status': 'done'})")
        let result = try t.store.execute("UPDATE o SET status = 'filled', note.by = 'crew', items = items + 1 WHERE status = 'open'")
        #expect(result.ids == ["1"])
        #expect(try t.store.collection("o").findByID("1").exec() == ["_id": "1", "status": "filled", "items": 3, "note": ["by": "crew"]])
        try t.store.execute("UPDATE o UNSET note WHERE _id = '1'")
        #expect(try t.store.collection("o").findByID("1").exec()?[path: ["note"]] == nil)
    }

    @Test("counters add up through UPDATE COLLECTION … APPLY … PN_INCREMENT")
    func counters() throws {
        let t = try TemporaryStore()
        try t.store.execute("INSERT INTO c DOCUMENTS ({'_id': 'k', 'name': 'cabin'})")
        for _ in 0..<3 {
            try t.store.execute("UPDATE COLLECTION c (visits PN_COUNTER) APPLY visits PN_INCREMENT BY 2 WHERE _id = 'k'")
        }
        try t.store.execute("UPDATE COLLECTION c (visits PN_COUNTER) APPLY visits PN_INCREMENT BY -1 WHERE _id = 'k'")
        #expect(try t.store.collection("c").findByID("k").exec()?[path: ["visits"]] == 5)
    }

    @Test("DELETE removes for everyone (a tombstone stays); EVICT drops the local copy only")
    func deleteAndEvict() throws {
        let t = try TemporaryStore()
        try t.store.execute("INSERT INTO d DOCUMENTS ({'_id': 'a', 'f': 1}), ({'_id': 'b', 'f': 2})")
        #expect(try t.store.execute("DELETE FROM d WHERE _id = 'a'").ids == ["a"])
        #expect(try t.store.execute("EVICT FROM d WHERE f = 2").ids == ["b"])
        #expect(try t.store.execute("SELECT * FROM d").items.isEmpty)
        let rows = try t.store.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM document WHERE collection = 'd'") }
        #expect(rows == 1, "the removed document keeps its tombstone; the evicted one is gone")
    }

    @Test("CREATE INDEX makes the planner use the index, with the same answers")
    func indexes() throws {
        let t = try TemporaryStore()
        try t.store.write { tx in
            for i in 0..<300 { try tx.upsert(["_id": .string("d\(i)"), "status": i % 3 == 0 ? "open" : "done", "n": .int(Int64(i))], into: "o") }
        }
        let before = try t.store.execute("SELECT * FROM o WHERE status = 'open' AND n >= 150").items
        try t.store.execute("CREATE INDEX by_status ON o (status)")
        try t.store.execute("CREATE INDEX IF NOT EXISTS by_status ON o (status)")
        let plan = try t.store.read { db in
            try QueryPlanner(db: db, indexes: t.store.fieldIndexes).plan(collection: "o", where: try DQLParser.parseExpression("status = 'open'")).description
        }
        #expect(plan == "index by_status (equality)")
        let sqlitePlan = try t.store.read { db in
            let plan = try QueryPlanner(db: db, indexes: t.store.fieldIndexes).plan(collection: "o", where: try DQLParser.parseExpression("status = 'open'"))
            return try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + plan.sql, arguments: plan.arguments).map { $0["detail"] as String }.joined()
        }
        #expect(sqlitePlan.contains("arcus_index_by_status"))
        #expect(try t.store.execute("SELECT * FROM o WHERE status = 'open' AND n >= 150").items == before)
        try t.store.execute("DROP INDEX by_status")
        #expect(t.store.fieldIndexes.isEmpty)
    }
}
