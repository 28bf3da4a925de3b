import ArcusCRDT
import Testing

@testable import ArcusStore

@Suite("DQL predicate analysis for the planner")
struct DQLPredicateAnalysisTests {
    private func equalities(_ text: String, _ arguments: [String: Value] = [:]) throws -> [DQLPredicateAnalysis.Equality] {
        try DQLPredicateAnalysis.equalities(in: DQL.expression(text), arguments: arguments)
    }

    private func ranges(_ text: String, _ arguments: [String: Value] = [:]) throws -> [DQLPredicateAnalysis.Range] {
        try DQLPredicateAnalysis.ranges(in: DQL.expression(text), arguments: arguments)
    }

    @Test("equalities from = and IN conjuncts, constants and arguments evaluated, either side")
    func equalityConjuncts() throws {
        let found = try equalities("color = 'red' AND :y = year AND owner.city IN ['Paris', :c, null] AND size == 2 * 3", ["y": 2020, "c": "Rome"])
        #expect(found == [
            .init(path: ["color"], values: ["red"]),
            .init(path: ["year"], values: [2020]),
            .init(path: ["owner", "city"], values: ["Paris", "Rome"]),
            .init(path: ["size"], values: [6]),
        ])
    }

    @Test("_id values, intersected across conjuncts")
    func ids() throws {
        #expect(try DQLPredicateAnalysis.idValues(in: DQL.expression("_id = 'a' AND x = 1"), arguments: [:]) == ["a"])
        #expect(try DQLPredicateAnalysis.idValues(in: DQL.expression("_id IN :ids"), arguments: ["ids": ["a", "b"]]) == ["a", "b"])
        #expect(try DQLPredicateAnalysis.idValues(in: DQL.expression("_id IN ['a', 'b'] AND _id = 'b'"), arguments: [:]) == ["b"])
        #expect(try DQLPredicateAnalysis.idValues(in: DQL.expression("_id = {'vin': 'V', 'n': 1}"), arguments: [:]) == [["vin": "V", "n": 1]])
        #expect(try DQLPredicateAnalysis.idValues(in: DQL.expression("x = 1"), arguments: [:]) == nil)
        #expect(try DQLPredicateAnalysis.idValues(in: nil, arguments: [:]) == nil)
    }

    @Test("only top-level conjuncts count: nothing under OR or NOT, no !=, no paths on both sides")
    func soundness() throws {
        #expect(try equalities("a = 1 OR b = 2").isEmpty)
        #expect(try equalities("NOT (a = 1)").isEmpty)
        #expect(try equalities("a != 1").isEmpty)
        #expect(try equalities("a NOT IN [1]").isEmpty)
        #expect(try equalities("a = b").isEmpty)
        #expect(try equalities("a[0] = 1").isEmpty)
        #expect(try equalities("lower(a) = 'x'").isEmpty)
        #expect(try equalities("(a = 1 OR b = 2) AND c = 3") == [.init(path: ["c"], values: [3])])
        #expect(try equalities("x = 1 AND (y = 2 AND z = 3)").map(\.path) == [["x"], ["y"], ["z"]])
    }

    @Test("a comparison with NULL or MISSING, or IN over a non-array, can match nothing")
    func impossible() throws {
        #expect(try equalities("a = NULL") == [.init(path: ["a"], values: [])])
        #expect(try equalities("a < :x", ["x": nil]) == [.init(path: ["a"], values: [])])
        #expect(try equalities("a = :o.nope", ["o": [:]]) == [.init(path: ["a"], values: [])])
        #expect(try equalities("a IN 5") == [.init(path: ["a"], values: [])])
        #expect(try equalities("a IN []") == [.init(path: ["a"], values: [])])
    }

    @Test("ranges from <, <=, >, >= and BETWEEN, with the path on the left")
    func rangeConjuncts() throws {
        let found = try ranges("a > 1 AND 10 >= a AND ts BETWEEN :from AND '2026-12-31' AND b = 3", ["from": "2026-01-01"])
        #expect(found == [
            .init(path: ["a"], op: .greater, bound: 1),
            .init(path: ["a"], op: .lessOrEqual, bound: 10),
            .init(path: ["ts"], op: .greaterOrEqual, bound: "2026-01-01"),
            .init(path: ["ts"], op: .lessOrEqual, bound: "2026-12-31"),
        ])
        #expect(try ranges("a > 1 OR a < 0").isEmpty)
        #expect(try ranges("a NOT BETWEEN 1 AND 2").isEmpty)
    }

    @Test("a missing argument is reported, not guessed")
    func missingArgument() throws {
        #expect(throws: DQLError.self) { try equalities("a = :nope") }
    }

    @Test("every document that matches satisfies every extracted predicate")
    func randomisedSoundness() throws {
        let seed = DQLRandom.seed(for: "predicate soundness")
        var random = DQLRandom(seed: seed)
        let atoms = ["a = 1", "a = 1.0", "a IN [1, 2]", "b = 'x'", "a > 0", "a <= 2", "b < 'y'", "a BETWEEN 1 AND 2",
                     "a != 2", "b IS NULL", "a = NULL", "1 = a", "2 > a"]
        let values: [Value?] = [nil, .null, 0, 1, 1.0, 2, 2.5, "x", "y", true]
        for _ in 0..<300 {
            var conjuncts: [String] = []
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                conjuncts.append(atoms.randomElement(using: &random) ?? "a = 1")
            }
            let condition = try DQL.expression(conjuncts.joined(separator: " AND "))
            let (equalities, ranges) = try DQLPredicateAnalysis.analyse(condition, arguments: [:])
            for a in values {
                for b in values {
                    var fields: [String: Value] = [:]
                    fields["a"] = a
                    fields["b"] = b
                    let doc = Value.object(fields)
                    guard try DQLEvaluator.matches(where: condition, document: doc, arguments: [:]) else { continue }
                    for equality in equalities {
                        let value = doc[path: equality.path]
                        #expect(value.map { v in equality.values.contains { DQLValues.equal($0, v) } } == true, "seed \(seed): \(condition) on \(doc)")
                    }
                    for range in ranges {
                        let holds = DQLEvaluator.compare(range.op, doc[path: range.path], range.bound)
                        #expect(holds == .bool(true), "seed \(seed): \(condition) on \(doc)")
                    }
                }
            }
        }
    }
}
