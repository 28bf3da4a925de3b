import ArcusCRDT
import Testing

@testable import ArcusStore

/// Hostile and random input: the parser either parses or throws a `DQLError`; it never crashes,
/// never overflows the stack, and never hangs.
@Suite("DQL robustness")
struct DQLRobustnessTests {
    private static func nestingError(_ text: String) -> DQLError? {
        guard let error = DQL.parseError(text) else { return nil }
        return error.kind == .nestingTooDeep ? error : nil
    }

    @Test("100,000 opening brackets of each kind give a clean nesting error")
    func bombs() {
        let n = 100_000
        let bombs = [
            "SELECT * FROM c WHERE " + String(repeating: "(", count: n) + "a" + String(repeating: ")", count: n),
            "SELECT * FROM c WHERE a IN " + String(repeating: "[", count: n),
            "SELECT * FROM c WHERE a = " + String(repeating: "{'a': ", count: n) + "1" + String(repeating: "}", count: n),
            "SELECT * FROM c WHERE " + String(repeating: "NOT ", count: n) + "a",
            "SELECT * FROM c WHERE a = " + String(repeating: "- ", count: n) + "a",
            "SELECT * FROM c WHERE " + String(repeating: "lower(", count: n) + "a" + String(repeating: ")", count: n),
            "INSERT INTO c DOCUMENTS (" + String(repeating: "[", count: n),
        ]
        for bomb in bombs {
            let error = Self.nestingError(bomb)
            #expect(error != nil, "\(bomb.prefix(40))…")
            #expect(error?.message == "nesting is deeper than 64 levels")
        }
    }

    @Test("a sign before a signed or bracketed number folds into the literal, so it prints and reads back the same",
          arguments: ["- + 1", "-(1)", "- -1", "- (2.5)", "- - -9223372036854775808", "-(-9223372036854775808)"])
    func signsFold(expression: String) throws {
        let printed = try DQLParser.parse("UPDATE c SET a = \(expression)").description
        #expect(try DQLParser.parse(printed).description == printed, "\(expression) printed as \(printed)")
    }

    /// Found by the random edits below: `a IN [1, 2] - 1` printed as `a IN ([1, 2] - 1)`, which
    /// reads back as SQL's one-element list `a IN [([1, 2] - 1)]`.
    @Test("arithmetic after IN prints without the parenthesis that would make it SQL's list",
          arguments: ["a IN [1, 2] - 1", "a NOT IN :list * 2", "a IN - b", "a IN (b - 1)", "a IN ('x')"])
    func arithmeticAfterIn(condition: String) throws {
        let parsed = try DQLParser.parse("SELECT * FROM c WHERE \(condition)")
        let printed = parsed.description
        #expect(try DQLParser.parse(printed).description == printed, "\(condition) printed as \(printed)")
    }

    @Test("a chain of 100,000 operators is refused by height, without recursion")
    func longChains() {
        let sum = "SELECT * FROM c WHERE a = " + Array(repeating: "1", count: 100_000).joined(separator: " + ")
        #expect(Self.nestingError(sum)?.message == "the expression is more than 256 operators deep")
        let concat = "SELECT * FROM c WHERE a = " + Array(repeating: "'x'", count: 300).joined(separator: " || ")
        #expect(Self.nestingError(concat) != nil)
    }

    @Test("long AND and OR chains are flat, so they parse and evaluate")
    func flatChains() throws {
        let n = 20_000
        let conjunction = try DQL.expression(Array(repeating: "a = 1", count: n).joined(separator: " AND "))
        guard case .and(let terms) = conjunction else { Issue.record("expected AND"); return }
        #expect(terms.count == n)
        #expect(try DQLEvaluator.matches(where: conjunction, document: ["a": 1], arguments: [:]))
        let disjunction = try DQL.expression((0..<n).map { "a = \($0)" }.joined(separator: " OR "))
        #expect(try DQLEvaluator.matches(where: disjunction, document: ["a": .int(Int64(n - 1))], arguments: [:]))
    }

    @Test("the limits are exact: 64 levels parse, 65 do not")
    func exactLimits() throws {
        func parens(_ k: Int) -> String { String(repeating: "(", count: k) + "a" + String(repeating: ")", count: k) }
        func arrays(_ k: Int) -> String { String(repeating: "[", count: k) + String(repeating: "]", count: k) }
        #expect(DQL.parseError("SELECT * FROM c WHERE " + parens(64)) == nil)
        #expect(Self.nestingError("SELECT * FROM c WHERE " + parens(65)) != nil)
        let deepest = try DQL.expression(arrays(64))
        guard case .literal(let value) = deepest else { Issue.record("expected a literal"); return }
        #expect(value.nestingDepth == Value.maximumNestingDepth)
        #expect(throws: DQLError.self) { try DQL.expression(arrays(65)) }
        let operators = Array(repeating: "1", count: 258).joined(separator: " + ")
        #expect(throws: DQLError.self) { try DQL.expression(operators) }
        #expect(try DQL.eval(Array(repeating: "1", count: 257).joined(separator: " + ")) == 257)
    }

    @Test("100,000 path steps and huge literals are fine")
    func wideInput() throws {
        let path = "a" + String(repeating: ".b", count: 100_000)
        guard case .path(let p) = try DQL.expression(path) else { Issue.record("expected a path"); return }
        #expect(p.steps.count == 100_001)
        let list = "x IN [" + (0..<50_000).map(String.init).joined(separator: ", ") + "]"
        #expect(try DQL.matches(list, ["x": 49_999]))
        let text = String(repeating: "é", count: 100_000)
        #expect(try DQL.eval("'\(text)'") == .string(text))
    }

    // MARK: Randomised

    private static let vocabulary: [String] = [
        "SELECT", "select", "*", "FROM", "COLLECTION", "cars", "WHERE", "ORDER", "BY", "ASC", "DESC", "LIMIT", "OFFSET",
        "INSERT", "INTO", "DOCUMENTS", "INITIAL", "ON", "ID", "CONFLICT", "DO", "UPDATE", "NOTHING", "FAIL",
        "SET", "UNSET", "APPLY", "PN_INCREMENT", "DELETE", "EVICT", "CREATE", "DROP", "INDEX", "IF", "EXISTS",
        "MAP", "REGISTER", "PN_COUNTER", "ATTACHMENT", "AND", "OR", "NOT", "IN", "LIKE", "IS", "NULL", "MISSING",
        "BETWEEN", "TRUE", "false", "AS", "a", "b", "_id", "x.y", "`w e`", "`", "'s'", "'it''s'", "'", "\"k\"",
        ":arg", "$args.v", "$args", "$", ":", "0", "1", "-1", "2.5", "1e3", "9223372036854775808", "1e999", "12ab",
        "(", ")", "[", "]", "{", "}", ",", ".", ";", "=", "==", "!=", "<>", "<", "<=", ">", ">=", "+", "-", "/",
        "%", "||", "&&", "!", "|", "&", "#", "--", "/*", "*/", "\n", "lower(", "length(", "coalesce(", "type(",
        "contains(", "nope(", "'%a_'", "'2026-03-04T10:00:00Z'", "é", "😀", "\u{0}",
    ]

    private static let valid = [
        "SELECT a, b.c AS d FROM COLLECTION cars (f MAP) WHERE a IN [1, 2] AND NOT b LIKE 'x%' ORDER BY a DESC LIMIT 5 OFFSET :o",
        "INSERT INTO cars DOCUMENTS (:doc), ({'_id': 'a', 'n': [1, {'m': 2}]}) ON ID CONFLICT DO UPDATE",
        "UPDATE cars SET a = a + 1, b.c = lower(:s) UNSET d WHERE _id = $args.id",
        "UPDATE COLLECTION c (n PN_COUNTER) APPLY n PN_INCREMENT BY 2 WHERE x BETWEEN 1 AND 3",
        "DELETE FROM cars WHERE ts < '2026-03-04T10:00:00Z' OR ts IS MISSING",
        "CREATE INDEX IF NOT EXISTS i ON cars (a.b, c)",
    ]

    /// Parses `text`; when it parses, its description must parse to the same description, and its
    /// WHERE clause must evaluate without trapping.
    @discardableResult
    private static func exercise(_ text: String, seed: UInt64) -> Bool {
        let statement: DQLStatement
        do {
            statement = try DQLParser.parse(text)
        } catch {
            #expect(error.line >= 1 && error.column >= 1, "seed \(seed): \(text)")
            return false
        }
        let printed = statement.description
        do {
            let reparsed = try DQLParser.parse(printed)
            #expect(reparsed.description == printed, "seed \(seed): \(text)")
        } catch {
            // Only trees near the nesting limit may fail to print back (parentheses add depth).
            #expect(error.kind == .nestingTooDeep, "seed \(seed): \(text) printed as \(printed): \(error)")
        }
        let arguments: [String: Value] = ["arg": 1, "v": "x", "o": 1, "doc": ["a": 1], "s": "S", "id": "a"]
        let documents: [Value] = [[:], ["a": 1, "b": ["c": nil], "_id": "a"], ["a": "x", "x": ["y": [1, 2]]]]
        let evaluator = DQLEvaluator(arguments: arguments)
        var condition: DQLExpression?
        switch statement {
        case .select(let s): condition = s.whereClause
        case .update(let s): condition = s.whereClause
        case .updateCounter(let s): condition = s.whereClause
        case .delete(let s), .evict(let s): condition = s.whereClause
        default: break
        }
        // Binding the arguments in changes no result.
        let boundCondition = try? condition?.binding(arguments)
        for document in documents {
            let direct = Result { () throws(DQLError) in try evaluator.matches(condition, document: document) }
            if let boundCondition, case .success(let matched) = direct {
                #expect((try? DQLEvaluator().matches(boundCondition, document: document)) == matched, "seed \(seed): \(text)")
            }
        }
        _ = try? statement.validate(arguments: arguments)
        _ = try? DQLPredicateAnalysis.analyse(condition, arguments: arguments)
        return true
    }

    @Test("random token soup never crashes the parser")
    func tokenSoup() {
        let seed = DQLRandom.seed(for: "token soup")
        var random = DQLRandom(seed: seed)
        for _ in 0..<4_000 {
            var text = ""
            for _ in 0..<Int.random(in: 0...30, using: &random) {
                text += Self.vocabulary.randomElement(using: &random) ?? ""
                if Bool.random(using: &random) { text += " " }
            }
            Self.exercise(text, seed: seed)
        }
    }

    @Test("random bytes never crash the parser")
    func randomBytes() {
        let seed = DQLRandom.seed(for: "random bytes")
        var random = DQLRandom(seed: seed)
        for _ in 0..<4_000 {
            let count = Int.random(in: 0...80, using: &random)
            let bytes = (0..<count).map { _ in
                // Mostly printable ASCII, with some high and control bytes.
                Int.random(in: 0..<10, using: &random) == 0 ? UInt8.random(in: 0...255, using: &random) : UInt8.random(in: 0x20...0x7E, using: &random)
            }
            Self.exercise(String(decoding: bytes, as: UTF8.self), seed: seed)
        }
    }

    @Test("valid statements with random edits never crash the parser")
    func mutations() {
        let seed = DQLRandom.seed(for: "mutations")
        var random = DQLRandom(seed: seed)
        let pieces = Self.vocabulary
        var parsed = 0
        for _ in 0..<4_000 {
            var characters = Array(Self.valid.randomElement(using: &random) ?? "")
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let at = Int.random(in: 0...characters.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0 where at < characters.count: characters.remove(at: at)
                case 1: characters.insert(contentsOf: pieces.randomElement(using: &random) ?? "", at: at)
                default: if at < characters.count { characters[at] = Character(UnicodeScalar(UInt8.random(in: 0x20...0x7E, using: &random))) }
                }
            }
            if Self.exercise(String(characters), seed: seed) { parsed += 1 }
        }
        // Enough edits leave a valid statement for the print-and-reparse check to mean something.
        #expect(parsed > 200, "seed \(seed): only \(parsed) edited statements parsed")
    }
}
