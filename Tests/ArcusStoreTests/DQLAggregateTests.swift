import ArcusCRDT
import Foundation
import Testing

@testable import ArcusStore

/// Aggregates, GROUP BY, HAVING and SELECT DISTINCT: parsing, the errors for what cannot be
/// grouped, and results from a store.
@Suite("DQL aggregates, GROUP BY, HAVING, DISTINCT")
struct DQLAggregateTests {
    /// Six cars: two fords, one audi, one kia, one without make, one with make null.
    static func cars() throws -> TemporaryStore {
        let t = try TemporaryStore()
        try t.store.execute("""
            INSERT INTO cars DOCUMENTS
            ({'_id': 'a', 'make': 'ford', 'year': 2018, 'price': 10, 'spec': {'doors': 4}}),
            ({'_id': 'b', 'make': 'ford', 'year': 2021, 'price': 20.5, 'spec': {'doors': 2}}),
            ({'_id': 'c', 'make': 'audi', 'year': 2015, 'price': 'unknown', 'spec': {'doors': 4}}),
            ({'_id': 'd', 'make': 'kia', 'year': 2020, 'price': null}),
            ({'_id': 'e', 'year': 2019, 'price': 5}),
            ({'_id': 'f', 'make': null, 'year': 2010})
            """)
        try t.store.execute("INSERT INTO boats DOCUMENTS ({'_id': 'x', 'make': 'ford'})")
        return t
    }

    // MARK: Parsing

    @Test("aggregates parse in any letter case and print back", arguments: [
        ("SELECT COUNT(*) FROM cars", "SELECT count(*) FROM cars"),
        ("select count(*), Sum(price), avg(price), MIN(year), max(spec.doors) from cars",
         "SELECT count(*), sum(price), avg(price), min(year), max(spec.doors) FROM cars"),
        ("SELECT make, COUNT(*) AS n FROM cars WHERE year > 2000 GROUP BY make HAVING n > 1 ORDER BY n DESC LIMIT 2",
         "SELECT make, count(*) AS n FROM cars WHERE (year > 2000) GROUP BY make HAVING (n > 1) ORDER BY count(*) DESC LIMIT 2"),
        ("SELECT DISTINCT make FROM cars", "SELECT DISTINCT make FROM cars"),
        ("SELECT distinct spec.doors, make FROM cars group by spec.doors, make having count(make) >= 1",
         "SELECT DISTINCT spec.doors, make FROM cars GROUP BY spec.doors, make HAVING (count(make) >= 1)"),
    ])
    func printsBack(_ text: String, _ printed: String) throws {
        let statement = try DQL.statement(text)
        #expect(statement.description == printed)
        #expect(try DQL.statement(printed).description == printed)
    }

    @Test("projections of aggregates are named as SQL engines name them")
    func names() throws {
        let s = try DQL.select("SELECT COUNT(*), count(make), SUM(spec.doors), max(year) AS newest, make FROM cars GROUP BY make")
        guard case .items(let items) = s.projection else { Issue.record("no items"); return }
        #expect(items.map(\.name) == ["count(*)", "count(make)", "sum(spec.doors)", "newest", "make"])
    }

    @Test("DISTINCT is still a field name where it cannot be the keyword")
    func distinctAsName() throws {
        let s = try DQL.select("SELECT distinct FROM cars")
        #expect(s.distinct == false)
        #expect(try DQL.select("SELECT distinct, make FROM cars").distinct == false)
        #expect(try DQL.select("SELECT DISTINCT distinct FROM cars").distinct == true)
        #expect(try DQL.select("SELECT * FROM cars WHERE group = 1 AND having = 2").groupBy.isEmpty)
    }

    @Test("what cannot be grouped or aggregated is refused with what to write instead", arguments: [
        ("SELECT make, year FROM cars GROUP BY make",
         "line 1, column 14: 'year' is neither in GROUP BY nor inside an aggregate; add it to GROUP BY or aggregate it, e.g. MAX(year)"),
        ("SELECT make, COUNT(*) FROM cars",
         "line 1, column 8: 'make' is not inside an aggregate; with aggregates and no GROUP BY all documents make one row: add GROUP BY make or aggregate it, e.g. MAX(make)"),
        ("SELECT * FROM cars GROUP BY make",
         "line 1, column 8: SELECT * cannot be combined with GROUP BY, HAVING or aggregates; list the fields and aggregates to return"),
        ("SELECT make FROM cars GROUP BY make HAVING year > 1",
         "line 1, column 44: 'year' is neither in GROUP BY nor inside an aggregate; add it to GROUP BY or aggregate it, e.g. MAX(year)"),
        ("SELECT make FROM cars GROUP BY make ORDER BY year",
         "line 1, column 46: 'year' is neither in GROUP BY nor inside an aggregate; add it to GROUP BY or aggregate it, e.g. MAX(year)"),
        ("SELECT DISTINCT make FROM cars ORDER BY year",
         "line 1, column 41: ORDER BY of a SELECT DISTINCT can only use what is projected; 'year' is not"),
        ("SELECT * FROM cars WHERE COUNT(*) > 1",
         "line 1, column 26: COUNT is an aggregate: filter groups by aggregates with HAVING, not WHERE"),
        ("SELECT make FROM cars GROUP BY count(*)",
         "line 1, column 32: COUNT is an aggregate: GROUP BY cannot group by an aggregate"),
        ("SELECT SUM(MAX(year)) FROM cars",
         "line 1, column 12: MAX is an aggregate: aggregates cannot be nested"),
        ("SELECT COUNT() FROM cars",
         "line 1, column 8: COUNT takes one argument: COUNT(*) counts documents, COUNT(field) the ones where field is neither missing nor null"),
        ("SELECT SUM(*) FROM cars", "line 1, column 12: expected an expression, found '*'"),
        ("SELECT SUM(a, b) FROM cars", "line 1, column 13: SUM takes one argument"),
        ("SELECT COUNT(DISTINCT make) FROM cars",
         "line 1, column 14: COUNT(DISTINCT …) is not supported yet; use SELECT DISTINCT or GROUP BY"),
        ("SELECT make FROM cars GROUP BY 1",
         "line 1, column 32: GROUP BY 1 groups by a constant; name a field (GROUP BY does not take column numbers)"),
        ("UPDATE cars SET n = COUNT(*)",
         "line 1, column 21: COUNT is an aggregate: aggregates belong in the projection, HAVING or ORDER BY of a SELECT"),
    ])
    func refused(_ text: String, _ expected: String) {
        #expect(DQL.parseError(text)?.description == expected)
    }

    @Test("an aggregate in a lone expression (the builder's find) is an error, not a crash")
    func builderExpression() {
        #expect(throws: DQLError.self) { try DQL.expression("count(*) > 1") }
    }

    // MARK: Results

    @Test("COUNT(*), COUNT(field), SUM, AVG, MIN, MAX without GROUP BY give one row")
    func wholeCollection() throws {
        let t = try Self.cars()
        let rows = try t.store.execute("""
            SELECT COUNT(*), COUNT(make), COUNT(price) AS priced, SUM(price), AVG(price), MIN(year), MAX(year), MIN(make), MAX(spec) FROM cars
            """).items
        #expect(rows == [[
            "count(*)": 6, "count(make)": 4, "priced": 4, "sum(price)": 35.5, "avg(price)": .double(35.5 / 3),
            "min(year)": 2010, "max(year)": 2021, "min(make)": "audi", "max(spec)": ["doors": 4],
        ]])
        #expect(try t.store.execute("SELECT COUNT(*) FROM cars WHERE make = 'ford'").items == [["count(*)": 2]])
        #expect(try t.store.execute("SELECT SUM(year) AS s FROM cars WHERE make = 'audi'").items == [["s": 2015]])
    }

    @Test("over no documents COUNT is 0 and the others are null; GROUP BY gives no rows")
    func nothing() throws {
        let t = try Self.cars()
        #expect(try t.store.execute("SELECT COUNT(*), COUNT(make), SUM(price), AVG(price), MIN(year), MAX(year) FROM cars WHERE year > 3000").items
                == [["count(*)": 0, "count(make)": 0, "sum(price)": .null, "avg(price)": .null, "min(year)": .null, "max(year)": .null]])
        #expect(try t.store.execute("SELECT COUNT(*) AS n FROM nowhere").items == [["n": 0]])
        #expect(try t.store.execute("SELECT make, COUNT(*) FROM nowhere GROUP BY make").items == [])
        #expect(try t.store.execute("SELECT DISTINCT make FROM nowhere").items == [])
    }

    @Test("GROUP BY: one row per key in key order; missing and null keys are one group shown as null; no _id")
    func groups() throws {
        let t = try Self.cars()
        let rows = try t.store.execute("SELECT make, COUNT(*) AS n, MAX(year) AS newest FROM cars GROUP BY make").items
        #expect(rows == [
            ["make": .null, "n": 2, "newest": 2019],
            ["make": "audi", "n": 1, "newest": 2015],
            ["make": "ford", "n": 2, "newest": 2021],
            ["make": "kia", "n": 1, "newest": 2020],
        ])
    }

    @Test("GROUP BY several paths, a nested one included, and an expression")
    func severalKeys() throws {
        let t = try Self.cars()
        #expect(try t.store.execute("SELECT spec.doors, make, COUNT(*) AS n FROM cars WHERE spec.doors IS NOT MISSING GROUP BY make, spec.doors").items == [
            ["doors": 4, "make": "audi", "n": 1],
            ["doors": 2, "make": "ford", "n": 1],
            ["doors": 4, "make": "ford", "n": 1],
        ])
        #expect(try t.store.execute("SELECT year > 2018 AS recent, COUNT(*) AS n FROM cars GROUP BY year > 2018").items == [
            ["recent": false, "n": 3], ["recent": true, "n": 3],
        ])
        #expect(try t.store.execute("SELECT upper(make) AS m FROM cars WHERE make IS NOT NULL GROUP BY upper(make) ORDER BY m DESC").items == [
            ["m": "KIA"], ["m": "FORD"], ["m": "AUDI"],
        ])
    }

    @Test("HAVING filters groups by aggregates, aliases and group keys")
    func having() throws {
        let t = try Self.cars()
        #expect(try t.store.execute("SELECT make, COUNT(*) AS n FROM cars GROUP BY make HAVING COUNT(*) > 1").items == [
            ["make": .null, "n": 2], ["make": "ford", "n": 2],
        ])
        #expect(try t.store.execute("SELECT make, COUNT(*) AS n FROM cars GROUP BY make HAVING n > 1 AND make IS NOT NULL").items == [
            ["make": "ford", "n": 2],
        ])
        #expect(try t.store.execute("SELECT make FROM cars GROUP BY make HAVING MAX(year) >= :y", arguments: ["y": 2020]).items == [
            ["make": "ford"], ["make": "kia"],
        ])
        #expect(try t.store.execute("SELECT COUNT(*) AS n FROM cars HAVING COUNT(*) > 100").items == [])
    }

    @Test("ORDER BY, LIMIT and OFFSET apply to the grouped rows")
    func window() throws {
        let t = try Self.cars()
        #expect(try t.store.execute("SELECT make, COUNT(*) AS n FROM cars GROUP BY make ORDER BY n DESC, make LIMIT 2").items == [
            ["make": .null, "n": 2], ["make": "ford", "n": 2],
        ])
        #expect(try t.store.execute("SELECT make, COUNT(*) AS n FROM cars GROUP BY make ORDER BY MIN(year) LIMIT 2 OFFSET 1").items == [
            ["make": "audi", "n": 1], ["make": "ford", "n": 2],
        ])
        #expect(try t.store.execute("SELECT make FROM cars GROUP BY make LIMIT :l OFFSET :o", arguments: ["l": 1, "o": 3]).items == [
            ["make": "kia"],
        ])
    }

    @Test("SELECT DISTINCT on a field, on a nested path, with ORDER BY")
    func distinct() throws {
        let t = try Self.cars()
        #expect(try t.store.execute("SELECT DISTINCT make FROM cars").items == [
            ["make": .null], ["make": "audi"], ["make": "ford"], ["make": "kia"],
        ])
        #expect(try t.store.execute("SELECT DISTINCT spec.doors FROM cars ORDER BY spec.doors DESC").items == [
            ["doors": 4], ["doors": 2], ["doors": .null],
        ])
        #expect(try t.store.execute("SELECT DISTINCT spec.doors AS d, make FROM cars WHERE make = 'ford'").items == [
            ["d": 2, "make": "ford"], ["d": 4, "make": "ford"],
        ])
        // With GROUP BY, DISTINCT drops repeated rows.
        #expect(try t.store.execute("SELECT DISTINCT COUNT(*) AS n FROM cars GROUP BY make").items == [["n": 2], ["n": 1]])
        #expect(try t.store.execute("SELECT DISTINCT * FROM cars").items.count == 6)
    }

    @Test("numbers that are equal group together; values are compared as DQL compares them")
    func numericKeys() throws {
        let t = try TemporaryStore()
        try t.store.execute("INSERT INTO n DOCUMENTS ({'_id': '1', 'v': 1}), ({'_id': '2', 'v': 1.0}), ({'_id': '3', 'v': '1'}), ({'_id': '4', 'v': [1.0]}), ({'_id': '5', 'v': [1]})")
        let rows = try t.store.execute("SELECT v, COUNT(*) AS n FROM n GROUP BY v").items
        #expect(rows.map { $0[path: ["n"]] } == [2, 1, 2])
        // Each group shows the key of one of its documents: 1 or 1.0, [1] or [1.0].
        #expect(rows.map { DQLValues.equal($0[path: ["v"]] ?? .null, [1]) } == [false, false, true])
        #expect(rows.map { DQLValues.equal($0[path: ["v"]] ?? .null, 1) } == [true, false, false])
        #expect(rows[1][path: ["v"]] == "1")
        #expect(try t.store.execute("SELECT SUM(v) AS s, AVG(v) AS a FROM n").items == [["s": 2.0, "a": 1.0]])
    }

    @Test("SUM of integers stays exact and becomes a double past 64 bits")
    func sums() throws {
        let t = try TemporaryStore()
        try t.store.execute("INSERT INTO n DOCUMENTS ({'_id': '1', 'v': 9223372036854775807}), ({'_id': '2', 'v': 1})")
        #expect(try t.store.execute("SELECT SUM(v) AS s FROM n WHERE _id = '1'").items == [["s": 9223372036854775807]])
        #expect(try t.store.execute("SELECT SUM(v) AS s FROM n").items == [["s": 9223372036854775808.0]])
    }

    @Test("randomised: COUNT, SUM, MIN, MAX per group agree with the same figures computed from SELECT *")
    func randomised() throws {
        let seed = ProcessInfo.processInfo.environment["ARCUS_TEST_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        print("DQLAggregateTests.randomised seed \(seed) (replay with ARCUS_TEST_SEED=\(seed))")
        var random = DQLRandom(seed: seed)
        let t = try TemporaryStore()
        var documents: [Value] = []
        for i in 0..<200 {
            var fields: [String: Value] = ["_id": .string("d\(i)")]
            let g = Int.random(in: 0..<6, using: &random)
            if g < 5 { fields["g"] = .string("g\(g)") }
            if Bool.random(using: &random) { fields["v"] = .int(Int64.random(in: -50...50, using: &random)) }
            documents.append(.object(fields))
        }
        try t.store.execute("INSERT INTO r DOCUMENTS (:d)", arguments: ["d": documents[0]])
        for document in documents.dropFirst() { try t.store.execute("INSERT INTO r DOCUMENTS (:d)", arguments: ["d": document]) }
        let rows = try t.store.execute("SELECT g, COUNT(*) AS n, COUNT(v) AS nv, SUM(v) AS s, MIN(v) AS lo, MAX(v) AS hi FROM r GROUP BY g").items
        var expected: [String: (n: Int64, nv: Int64, s: Int64, lo: Int64?, hi: Int64?)] = [:]
        for document in documents {
            let g = document[path: ["g"]]?.stringValue ?? "-"
            var e = expected[g] ?? (0, 0, 0, nil, nil)
            e.n += 1
            if case .int(let v)? = document[path: ["v"]] {
                e.nv += 1
                e.s += v
                e.lo = min(e.lo ?? v, v)
                e.hi = max(e.hi ?? v, v)
            }
            expected[g] = e
        }
        #expect(rows.count == expected.count, "seed \(seed)")
        for row in rows {
            let g = row[path: ["g"]]?.stringValue ?? "-"
            guard let e = expected[g] else { Issue.record("unexpected group \(g), seed \(seed)"); continue }
            #expect(row[path: ["n"]] == .int(e.n), "seed \(seed)")
            #expect(row[path: ["nv"]] == .int(e.nv), "seed \(seed)")
            #expect(row[path: ["s"]] == (e.nv == 0 ? .null : .int(e.s)), "seed \(seed)")
            #expect(row[path: ["lo"]] == (e.lo.map(Value.int) ?? .null), "seed \(seed)")
            #expect(row[path: ["hi"]] == (e.hi.map(Value.int) ?? .null), "seed \(seed)")
        }
    }
}
