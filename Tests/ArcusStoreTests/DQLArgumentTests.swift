import ArcusCRDT
import Testing

@testable import ArcusStore

@Suite("DQL arguments")
struct DQLArgumentTests {
    @Test(":name and $args.name read the same argument")
    func bothSpellings() throws {
        let doc: Value = ["color": "blue", "age": 30]
        let arguments: [String: Value] = ["color": "blue", "age": 32]
        #expect(try DQL.matches("color == $args.color && age <= $args.age", doc, arguments))
        #expect(try DQL.matches("color = :color AND age <= :age", doc, arguments))
        #expect(try DQL.eval(":age + 1", [:], arguments) == 33)
    }

    @Test("arguments may be objects and arrays, and can be stepped into")
    func structuredArguments() throws {
        let arguments: [String: Value] = ["filter": ["colors": ["red", "blue"], "min": 3]]
        #expect(try DQL.matches("color IN :filter.colors AND n >= $args.filter.min", ["color": "blue", "n": 3], arguments))
        #expect(try DQL.eval(":filter.nope", [:], arguments) == nil)
    }

    @Test("referencedArguments lists every use with its position, in source order")
    func references() throws {
        let statement = try DQL.statement("SELECT :a AS x FROM c WHERE b = $args.b AND c IN [:c, :a] ORDER BY :d LIMIT :n OFFSET :o")
        #expect(statement.referencedArguments.map(\.name) == ["a", "b", "c", "a", "d", "n", "o"])
        #expect(statement.referencedArguments.map(\.position.column) == [8, 33, 51, 55, 68, 77, 87])
        let update = try DQL.statement("UPDATE c SET a = :v WHERE _id = :id")
        #expect(update.referencedArguments.map(\.name) == ["v", "id"])
        let counter = try DQL.statement("UPDATE c APPLY n PN_INCREMENT BY :by WHERE x = :x")
        #expect(counter.referencedArguments.map(\.name) == ["by", "x"])
        let insert = try DQL.statement("INSERT INTO c DOCUMENTS (:d1), ({'a': :v})")
        #expect(insert.referencedArguments.map(\.name) == ["d1", "v"])
        #expect(try DQL.statement("DELETE FROM c WHERE a = :a").referencedArguments.map(\.name) == ["a"])
        #expect(try DQL.statement("CREATE INDEX i ON c (a)").referencedArguments.isEmpty)
    }

    @Test("validate rejects a missing argument before anything runs, naming it and where it is used")
    func missingArgument() throws {
        let statement = try DQL.statement("UPDATE cars SET color = :color\nWHERE _id = :id")
        do {
            try statement.validate(arguments: ["color": "red"])
            Issue.record("expected a missing-argument error")
        } catch {
            #expect(error.kind == .missingArgument)
            #expect(error.description == "line 2, column 13: missing argument 'id': the statement uses :id but the arguments have no 'id'")
        }
        try statement.validate(arguments: ["color": "red", "id": "x"])
        // A NULL argument is present.
        try statement.validate(arguments: ["color": nil, "id": "x"])
    }

    @Test("evaluating a missing argument throws the same error")
    func missingAtEvaluation() throws {
        do {
            _ = try DQL.eval("a = 1 OR b = $args.b", ["a": 2])
            Issue.record("expected a missing-argument error")
        } catch {
            #expect(error.kind == .missingArgument)
            #expect(error.column == 14)
        }
    }

    @Test("LIMIT and OFFSET arguments must be non-negative integers")
    func counts() throws {
        let select = try DQL.select("SELECT * FROM c LIMIT :n OFFSET :o")
        #expect(try select.limit?.resolve(arguments: ["n": 5]) == 5)
        #expect(try select.limit?.resolve(arguments: ["n": 5.0]) == 5)
        let statement = DQLStatement.select(select)
        for bad: Value in [-1, 1.5, "5", nil] {
            do {
                try statement.validate(arguments: ["n": bad, "o": 0])
                Issue.record("expected an error for \(bad)")
            } catch {
                #expect(error.kind == .invalidArgument)
                #expect(error.column == 23)
            }
        }
    }

    @Test("INSERT documents evaluate to objects with a string or object _id")
    func insertDocuments() throws {
        guard case .insert(let insert) = try DQL.statement("INSERT INTO c DOCUMENTS (:a), ({'_id': {'k': :k}, 'n': :n + 1})") else {
            Issue.record("expected INSERT"); return
        }
        let documents = try insert.evaluateDocuments(arguments: ["a": ["_id": "x", "v": 1], "k": 7, "n": 1])
        #expect(documents == [["_id": "x", "v": 1], ["_id": ["k": 7], "n": 2]])

        let errors: [(Value, String)] = [
            ("text", "line 1, column 26: document 1 must be an object, found string"),
            (["_id": 5], "line 1, column 26: the _id of document 1 must be a string or an object, found number"),
        ]
        for (bad, message) in errors {
            do {
                _ = try insert.evaluateDocuments(arguments: ["a": bad, "k": 7, "n": 1])
                Issue.record("expected an error")
            } catch {
                #expect(error.kind == .invalidDocument)
                #expect(error.description == message)
            }
        }
        // validate runs the same checks.
        #expect(throws: DQLError.self) { try DQLStatement.insert(insert).validate(arguments: ["a": [1], "k": 7, "n": 1]) }
    }

    @Test("PN_INCREMENT amounts must be numbers")
    func incrementAmounts() throws {
        guard case .updateCounter(let update) = try DQL.statement("UPDATE c APPLY n PN_INCREMENT BY :by") else {
            Issue.record("expected a counter update"); return
        }
        let evaluator = DQLEvaluator(arguments: ["by": 2])
        #expect(try evaluator.incrementAmount(update.increments[0], document: [:]) == .int(2))
        #expect(throws: DQLError.self) { try DQLEvaluator(arguments: ["by": "2"]).incrementAmount(update.increments[0], document: [:]) }
    }

    @Test("binding replaces every argument by its value and folds what became literal")
    func binding() throws {
        let statement = try DQL.statement("SELECT :a AS x FROM c WHERE b IN [:c, 2] AND name LIKE :p ORDER BY :d LIMIT :n OFFSET $args.o")
        let arguments: [String: Value] = ["a": "A", "c": 1, "p": "x%", "d": 0, "n": 5, "o": 2]
        let bound = try statement.binding(arguments)
        #expect(bound.referencedArguments.isEmpty)
        #expect(bound.description == "SELECT 'A' AS x FROM c WHERE ((b IN [1, 2]) AND (name LIKE 'x%')) ORDER BY 0 LIMIT 5 OFFSET 2")
        guard case .select(let s) = bound, case .and(let terms)? = s.whereClause, case .like(_, _, let compiled, _) = terms[1] else {
            Issue.record("unexpected shape"); return
        }
        #expect(compiled == DQLLikePattern("x%"))
        let doc: Value = ["b": 1, "name": "xy"]
        #expect(try DQLEvaluator().matches(s.whereClause, document: doc))
        #expect(try DQLEvaluator(arguments: arguments).matches(try DQL.select(statement.description).whereClause, document: doc))

        do {
            _ = try statement.binding(["a": 1])
            Issue.record("expected a missing-argument error")
        } catch {
            #expect(error.kind == .missingArgument)
        }
        let insert = try DQL.statement("INSERT INTO c DOCUMENTS ({'_id': :id, 'v': [:v]})").binding(["id": "k", "v": 1])
        #expect(insert.description == "INSERT INTO c DOCUMENTS ({'_id': 'k', 'v': [1]})")
    }
}
