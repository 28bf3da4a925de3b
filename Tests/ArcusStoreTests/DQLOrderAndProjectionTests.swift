import ArcusCRDT
import Testing

@testable import ArcusStore

@Suite("DQL ORDER BY and projection")
struct DQLOrderAndProjectionTests {
    @Test("the total order ranks kinds: missing < null < bool < number < string < binary < array < object")
    func kindRanks() {
        let ascending: [Value?] = [nil, .null, false, true, -1.5, 0, 2, "", "a", .binary([0]), [], [1], [:], ["a": 1]]
        for i in ascending.indices {
            for j in ascending.indices {
                let expected: DQLComparison = i < j ? .less : i == j ? .equal : .greater
                #expect(DQLValueOrder.compare(ascending[i], ascending[j]) == expected, "\(String(describing: ascending[i])) vs \(String(describing: ascending[j]))")
            }
        }
    }

    @Test("numbers order by value across int and double; 1 and 1.0 are tied")
    func numbers() {
        #expect(DQLValueOrder.compare(1, 1.0) == .equal)
        #expect(DQLValueOrder.compare(.int(9_007_199_254_740_993), .double(9_007_199_254_740_992)) == .greater)
        #expect(DQLValueOrder.compare(.int(.max), .double(9.3e18)) == .less)
        #expect(DQLValueOrder.compare(.int(.min), .double(-9.3e18)) == .greater)
        #expect(DQLValueOrder.compare(-2, -1.5) == .less)
    }

    @Test("date strings come before other strings and sort by instant")
    func dates() {
        let values: [Value?] = ["b", "2026-03-04T11:00:00+01:00", "a", "2026-03-04T09:30:00Z", "2026-03-04", "2026-03-04T10:00:00Z"]
        let sorted = values.sorted(by: DQLValueOrder.areInIncreasingOrder).map { $0?.stringValue ?? "" }
        // Equal instants are tied and broken by text, so the order is total and deterministic.
        #expect(sorted == ["2026-03-04", "2026-03-04T09:30:00Z", "2026-03-04T10:00:00Z", "2026-03-04T11:00:00+01:00", "a", "b"])
    }

    @Test("strings order by Unicode scalars; arrays and objects element by element")
    func structured() {
        #expect(DQLValueOrder.compare("B", "a") == .less)
        #expect(DQLValueOrder.compare("a", "ab") == .less)
        #expect(DQLValueOrder.compare([1, "x"], [1, "y"]) == .less)
        #expect(DQLValueOrder.compare([1, 2], [1]) == .greater)
        #expect(DQLValueOrder.compare(["a": 1, "b": 2], ["a": 1, "c": 0]) == .less)
        #expect(DQLValueOrder.compare(["a": 2], ["a": 1, "b": 0]) == .greater)
        #expect(DQLValueOrder.compare(.binary([1, 2]), .binary([1, 3])) == .less)
    }

    @Test("ORDER BY sorts by each term in turn, DESC reversed, MISSING first ascending")
    func orderBy() throws {
        let docs: [Value] = [
            ["_id": "1", "make": "Kia", "year": 2020],
            ["_id": "2", "make": "Audi", "year": 2018],
            ["_id": "3", "make": "Kia", "year": 2022],
            ["_id": "4", "year": 2019],
            ["_id": "5", "make": nil, "year": 2017],
        ]
        let select = try DQL.select("SELECT * FROM cars ORDER BY make, year DESC")
        let evaluator = DQLEvaluator()
        var keyed: [(Value, [Value?])] = []
        for doc in docs { keyed.append((doc, try evaluator.sortKeys(select.orderBy, document: doc))) }
        keyed.sort { DQLEvaluator.precedes($0.1, $1.1, orderBy: select.orderBy) }
        #expect(keyed.map { $0.0[path: "_id"]?.stringValue ?? "" } == ["4", "5", "2", "3", "1"])
    }

    @Test("SELECT * projects the whole document, _id included")
    func projectAll() throws {
        let doc: Value = ["_id": "x", "a": 1]
        #expect(try DQLEvaluator.project(.all, document: doc, arguments: [:]) == doc)
    }

    @Test("projected items are named by alias or last path component; MISSING ones are left out; NULL kept")
    func projectItems() throws {
        let select = try DQL.select("SELECT _id, owner.name, year + 1 AS next, color, nope, tags[0], :label AS label FROM cars")
        let doc: Value = ["_id": ["vin": "V"], "owner": ["name": "Ada"], "year": 2018, "color": nil, "tags": ["t"]]
        let row = try DQLEvaluator.project(select.projection, document: doc, arguments: ["label": "L"])
        #expect(row == ["_id": ["vin": "V"], "name": "Ada", "next": 2019, "color": nil, "$6": "t", "label": "L"])
    }
}
