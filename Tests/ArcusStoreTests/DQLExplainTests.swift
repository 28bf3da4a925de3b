import ArcusCRDT
import Testing

@testable import ArcusStore

/// `EXPLAIN statement` returns the plan the store would follow, without running it;
/// `PROFILE select` runs the SELECT and adds what it read and how long it took.
@Suite("EXPLAIN and PROFILE")
struct DQLExplainTests {
    /// Ten live cars c0…c9 of years 2010…2019: fords c0, c3, c6, c9, three kias, three vws; c10 (a kia) deleted.
    func carStore() throws -> TemporaryStore {
        let t = try TemporaryStore()
        let makes = ["ford", "kia", "vw", "ford", "kia", "vw", "ford", "kia", "vw", "ford", "kia"]
        for (i, make) in makes.enumerated() {
            try t.store.execute("INSERT INTO cars DOCUMENTS (:d)", arguments: ["d": ["_id": .string("c\(i)"), "make": .string(make), "year": .int(Int64(2010 + i))]])
        }
        try t.store.execute("DELETE FROM cars WHERE _id = 'c10'")
        return t
    }

    func plan(_ store: Store, _ statement: String, arguments: [String: Value] = [:]) throws -> [String: Value] {
        let result = try store.execute(statement, arguments: arguments)
        #expect(result.items.count == 1)
        #expect(result.mutatedDocumentIDs.isEmpty)
        return try #require(result.items.first?.objectValue)
    }

    @Test("a lookup on an indexed field names the index and its values; without the index it is a scan")
    func indexThenScan() throws {
        let t = try carStore()
        try t.store.execute("CREATE INDEX cars_make ON cars (make)")
        let indexed = try plan(t.store, "explain select * from cars where make = 'ford'")
        #expect(indexed["operation"] == "select")
        #expect(indexed["collection"] == "cars")
        #expect(indexed["access"] == ["type": "index", "index": "cars_make", "index_fields": ["make"], "field": "make",
                                      "lookup": "equality", "values": ["ford"]])
        #expect(indexed["filter"] == "(make = 'ford')")
        #expect(indexed["estimated_rows"] == 4)
        #expect(indexed["limit"] == .null)
        #expect(indexed["distinct"] == false)

        try t.store.execute("DROP INDEX cars_make")
        let scanned = try plan(t.store, "EXPLAIN SELECT * FROM cars WHERE make = 'ford'")
        #expect(scanned["access"] == ["type": "scan"])
        #expect(scanned["filter"] == "(make = 'ford')")
        // A scan reads every live document of the collection (the deleted one is not counted).
        #expect(scanned["estimated_rows"] == 10)
    }

    @Test("ranges, _id lookups, sort, window and arguments appear in the plan")
    func otherAccessPaths() throws {
        let t = try carStore()
        try t.store.execute("CREATE INDEX cars_year ON cars (year)")
        let range = try plan(t.store, "EXPLAIN SELECT make FROM cars WHERE year >= :y ORDER BY year DESC LIMIT 2 OFFSET 1", arguments: ["y": 2015])
        #expect(range["access"]?.objectValue?["lookup"] == "range")
        #expect(range["access"]?.objectValue?["bounds"] == [["op": ">=", "value": 2015]])
        #expect(range["estimated_rows"] == 5)
        #expect(range["filter"] == "(year >= 2015)")
        #expect(range["order_by"] == [["expression": "year", "descending": true]])
        #expect(range["limit"] == 2)
        #expect(range["offset"] == 1)
        #expect(range["projection"] == ["make"])

        let byID = try plan(t.store, "EXPLAIN SELECT * FROM cars WHERE _id IN ['c1', 'c2', 'nope']")
        #expect(byID["access"] == ["type": "primary_key", "ids": ["c1", "c2", "nope"]])
        #expect(byID["estimated_rows"] == 2)

        let all = try plan(t.store, "EXPLAIN SELECT * FROM cars")
        #expect(all["access"] == ["type": "scan"])
        #expect(all["filter"] == .null)
    }

    @Test("PROFILE gives the plan's estimate beside what the query actually read, matched and returned")
    func estimatedAndActual() throws {
        let t = try carStore()
        try t.store.execute("CREATE INDEX cars_make ON cars (make)")
        // The index yields the four fords; the WHERE keeps the three after 2012, LIMIT returns two.
        let profiled = try plan(t.store, "PROFILE SELECT * FROM cars WHERE make = 'ford' AND year > 2012 ORDER BY year LIMIT 2")
        #expect(profiled["estimated_rows"] == 4)
        #expect(profiled["actual_rows"] == ["documents_read": 4, "documents_matched": 3, "rows_returned": 2])
        guard case .double(let elapsed)? = profiled["elapsed_ms"] else {
            Issue.record("elapsed_ms is not a number: \(String(describing: profiled["elapsed_ms"]))")
            return
        }
        #expect(elapsed >= 0)

        let scanned = try plan(t.store, "profile SELECT * FROM cars WHERE year > 2012 LIMIT 3")
        #expect(scanned["access"] == ["type": "scan"])
        #expect(scanned["estimated_rows"] == 10)
        #expect(scanned["actual_rows"]?.objectValue?["rows_returned"] == 3)
    }

    @Test("a COUNT the index answers alone reads no document, nor does COUNT(*) per one field; other grouped aggregates read them all")
    func aggregatePlans() throws {
        let t = try carStore()
        try t.store.execute("CREATE INDEX cars_make ON cars (make)")
        let counted = try plan(t.store, "EXPLAIN SELECT COUNT(*) AS n FROM cars WHERE make = 'kia'")
        #expect(counted["access"] == ["type": "index_count", "index": "cars_make", "index_fields": ["make"], "field": "make", "values": ["kia"]])
        #expect(counted["counted_without_reading_documents"] == true)
        #expect(counted["filter"] == .null)
        #expect(counted["aggregates"] == ["count(*)"])
        #expect(counted["group_by"] == [])
        #expect(counted["estimated_rows"] == 3)
        let countedRun = try plan(t.store, "PROFILE SELECT COUNT(*) AS n FROM cars WHERE make = 'kia'")
        #expect(countedRun["actual_rows"] == ["documents_read": 0, "documents_matched": 3, "rows_returned": 1])

        let grouped = try plan(t.store, "EXPLAIN SELECT make, COUNT(*) AS n, MAX(year) FROM cars GROUP BY make HAVING n > 2 ORDER BY n DESC")
        #expect(grouped["access"] == ["type": "scan"])
        #expect(grouped["counted_without_reading_documents"] == false)
        #expect(grouped["group_by"] == ["make"])
        #expect(grouped["aggregates"] == ["count(*)", "max(year)"])
        #expect(grouped["having"] == "(n > 2)")
        #expect(grouped["estimated_rows"] == 10)
        let groupedRun = try plan(t.store, "PROFILE SELECT make, COUNT(*) AS n, MAX(year) FROM cars GROUP BY make HAVING n > 3")
        #expect(groupedRun["actual_rows"] == ["documents_read": 10, "documents_matched": 10, "rows_returned": 1])
        // COUNT(*) per one field: SQL counts each group.
        let countedGroups = try plan(t.store, "PROFILE SELECT make, COUNT(*) AS n FROM cars GROUP BY make HAVING n > 3")
        #expect(countedGroups["access"] == ["type": "count_per_field", "field": "make", "within": ["type": "count_of_collection"]])
        #expect(countedGroups["actual_rows"] == ["documents_read": 0, "documents_matched": 10, "rows_returned": 1])

        let distinct = try plan(t.store, "EXPLAIN SELECT DISTINCT make FROM cars")
        #expect(distinct["distinct"] == true)
        #expect(distinct["group_by"] == ["make"])
    }

    @Test("EXPLAIN of a write describes it and writes nothing")
    func explainedWritesWriteNothing() throws {
        let t = try carStore()
        try t.store.execute("CREATE INDEX cars_make ON cars (make)")
        let before = try t.store.execute("SELECT * FROM cars ORDER BY _id").items
        let update = try plan(t.store, "EXPLAIN UPDATE cars SET color = 'red' WHERE make = 'vw'")
        #expect(update["operation"] == "update")
        #expect(update["access"]?.objectValue?["index"] == "cars_make")
        #expect(update["estimated_rows"] == 3)
        #expect(update["set"] == ["color = 'red'"])
        let delete = try plan(t.store, "EXPLAIN DELETE FROM cars")
        #expect(delete["operation"] == "delete")
        #expect(delete["access"] == ["type": "scan"])
        #expect(try plan(t.store, "EXPLAIN EVICT FROM cars WHERE _id = 'c1'")["operation"] == "evict")
        let insert = try plan(t.store, "EXPLAIN INSERT INTO cars DOCUMENTS ({'_id': 'n1'}), ({'_id': 'n2'})")
        #expect(insert["operation"] == "insert")
        #expect(insert["documents"] == 2)
        #expect(try plan(t.store, "EXPLAIN CREATE INDEX cars_year ON cars (year)")["operation"] == "create_index")
        #expect(try plan(t.store, "EXPLAIN DROP INDEX cars_make")["exists"] == true)
        #expect(try t.store.execute("SELECT * FROM cars ORDER BY _id").items == before)
        #expect(t.store.fieldIndexes.map(\.name) == ["cars_make"])
    }

    @Test("system: collections are read, not indexed; writes to them are refused even under EXPLAIN")
    func systemCollections() throws {
        let t = try carStore()
        let read = try plan(t.store, "EXPLAIN SELECT * FROM system:collections WHERE name = 'cars'")
        #expect(read["access"] == ["type": "system_collection"])
        #expect(read["estimated_rows"] == .null)
        #expect(throws: StoreError.self) { try t.store.execute("EXPLAIN DELETE FROM system:collections") }
    }

    @Test("PROFILE of a write is refused where it stands, before anything runs", arguments: [
        "PROFILE UPDATE cars SET color = 'red'",
        "PROFILE DELETE FROM cars",
        "profile INSERT INTO cars DOCUMENTS ({'_id': 'x'})",
        "PROFILE EVICT FROM cars",
    ])
    func profileOfWriteIsRefused(statement: String) throws {
        let t = try carStore()
        let error = try #require(throws: DQLError.self) { try t.store.execute(statement) }
        #expect(error.description == "line 1, column 9: PROFILE runs SELECTs only; use EXPLAIN to see a write's plan")
        #expect(try t.store.execute("SELECT COUNT(*) AS n FROM cars").items == [["n": 10]])
    }

    @Test("malformed EXPLAIN and PROFILE give parse errors with line and column", arguments: [
        ("EXPLAIN", "line 1, column 8: expected a statement after EXPLAIN, found the end of the statement"),
        ("PROFILE   ", "line 1, column 11: expected a statement after PROFILE, found the end of the statement"),
        ("EXPLAIN EXPLAIN SELECT * FROM cars", "line 1, column 9: EXPLAIN cannot be followed by EXPLAIN: give it the statement itself"),
        ("explain\nprofile SELECT * FROM cars", "line 2, column 1: EXPLAIN cannot be followed by PROFILE: give it the statement itself"),
        ("EXPLAIN SELEC * FROM cars", "line 1, column 9: unknown statement 'SELEC': expected SELECT, INSERT, UPDATE, DELETE, EVICT, CREATE INDEX or DROP INDEX after EXPLAIN"),
        ("PROFILE cars", "line 1, column 9: unknown statement 'cars': expected SELECT after PROFILE"),
        ("EXPLAIN SELECT * FORM cars", "line 1, column 18: expected FROM after the projection, found 'FORM'"),
    ])
    func parseErrors(text: String, message: String) throws {
        let error = try #require(throws: DQLError.self) { try DQLParser.parse(text) }
        #expect(error.description == message)
    }

    @Test("EXPLAIN and PROFILE print back as DQL, and fields may still be named explain or profile")
    func descriptionsAndNames() throws {
        #expect(try DQLParser.parse("explain select * from cars where a = 1").description == "EXPLAIN SELECT * FROM cars WHERE (a = 1)")
        #expect(try DQLParser.parse("PROFILE SELECT profile FROM cars").description == "PROFILE SELECT profile FROM cars")
        let t = try TemporaryStore()
        try t.store.execute("INSERT INTO users DOCUMENTS ({'_id': 'u', 'profile': 'admin', 'explain': 1})")
        #expect(try t.store.execute("SELECT profile FROM users WHERE explain = 1").items == [["profile": "admin"]])
    }

    @Test("an observer of EXPLAIN or PROFILE is refused, saying to observe the SELECT")
    func observersRefused() throws {
        let t = try carStore()
        for statement in ["EXPLAIN SELECT * FROM cars", "PROFILE SELECT * FROM cars"] {
            let error = try #require(throws: StoreError.self) { _ = try t.store.registerObserver(statement) { _ in } }
            #expect("\(error)".contains("observe the SELECT itself"))
        }
    }
}
