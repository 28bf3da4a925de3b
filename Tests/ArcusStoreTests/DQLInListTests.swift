import ArcusCRDT
import Testing

@testable import ArcusStore

/// SQL's `IN (a, b, …)` means what `IN [a, b, …]` means; what it cannot mean is an error, never a
/// condition that silently matches nothing.
@Suite("DQL IN (…) lists")
struct DQLInListTests {
    @Test("IN (…) parses to the same list as IN […]", arguments: [
        ("a IN ('ford')", "(a IN ['ford'])"),
        ("a IN ('ford', 'audi')", "(a IN ['ford', 'audi'])"),
        ("a NOT IN (1, 2.5)", "(a NOT IN [1, 2.5])"),
        ("a IN (:x)", "(a IN [:x])"),
        ("a IN (b + 1, lower(c))", "(a IN [(b + 1), lower(c)])"),
        ("a in ( 'x' , 'y' ) AND b", "((a IN ['x', 'y']) AND b)"),
    ])
    func shapes(_ text: String, _ shape: String) throws {
        #expect(try DQL.shape(text) == shape)
    }

    @Test("forms SQL reads differently are refused with what to write instead", arguments: [
        ("SELECT * FROM cars WHERE make IN ()", "line 1, column 35: IN () needs at least one value; write IN [] for an empty list"),
        ("SELECT * FROM cars WHERE make IN (SELECT make FROM boats)", "line 1, column 35: subqueries are not supported; list the values: IN ('a', 'b') or IN :list"),
        ("SELECT * FROM cars WHERE make IN (['a', 'b'])", "line 1, column 34: IN ([…]) would look for the array itself; write IN [a, b] or IN (a, b)"),
        ("SELECT * FROM cars WHERE make IN ('a' 'b')", "line 1, column 39: expected ')' or ',' in the IN list that starts at line 1, column 34, found string 'b'"),
    ])
    func refused(_ text: String, _ expected: String) {
        #expect(DQL.parseError(text)?.description == expected)
    }

    @Test("a one-element list matches like equality, in the evaluator")
    func evaluates() throws {
        let doc: Value = ["make": "ford", "n": 2]
        #expect(try DQL.eval("make IN ('ford')", doc) == true)
        #expect(try DQL.eval("make NOT IN ('ford')", doc) == false)
        #expect(try DQL.eval("n IN (1, 2.0)", doc) == true)
        #expect(try DQL.eval("make IN (:m)", doc, ["m": "ford"]) == true)
        #expect(try DQL.eval("make IN (:m, 'x')", doc, ["m": "audi"]) == false)
    }

    @Test("IN (…) finds documents in a store, with and without an index")
    func store() throws {
        let t = try TemporaryStore()
        try t.store.execute("""
            INSERT INTO cars DOCUMENTS ({'_id': 'a', 'make': 'ford'}), ({'_id': 'b', 'make': 'audi'}), ({'_id': 'c', 'make': 'kia'})
            """)
        func ids(_ text: String) throws -> [String] {
            try t.store.execute(text).items.compactMap { $0[path: ["_id"]]?.stringValue }.sorted()
        }
        #expect(try ids("SELECT * FROM cars WHERE make IN ('ford')") == ["a"])
        #expect(try ids("SELECT * FROM cars WHERE make IN ('ford', 'kia')") == ["a", "c"])
        #expect(try ids("SELECT * FROM cars WHERE make NOT IN ('ford', 'kia')") == ["b"])
        #expect(try ids("SELECT * FROM cars WHERE _id IN ('b')") == ["b"])
        try t.store.execute("CREATE INDEX cars_make ON cars (make)")
        #expect(try ids("SELECT * FROM cars WHERE make IN ('ford', 'kia')") == ["a", "c"])
    }
}
