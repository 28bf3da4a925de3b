import ArcusCRDT
import Testing

@testable import ArcusStore

/// How expressions group. `DQL.shape` prints the parsed tree with every operator in parentheses.
@Suite("DQL expression grammar")
struct DQLExpressionParsingTests {
    @Test("precedence: OR < AND < NOT < comparison < additive < multiplicative < unary minus", arguments: [
        ("a OR b AND c", "(a OR (b AND c))"),
        ("a AND b OR c AND d", "((a AND b) OR (c AND d))"),
        ("NOT a = 1 AND b", "((NOT (a = 1)) AND b)"),
        ("NOT NOT a", "(NOT (NOT a))"),
        ("a = 1 + 2 * 3", "(a = (1 + (2 * 3)))"),
        ("a < b - c % d", "(a < (b - (c % d)))"),
        ("-a * b", "((- a) * b)"),
        ("- -a", "(- (- a))"),
        ("a - b - c", "((a - b) - c)"),
        ("a / b * c", "((a / b) * c)"),
        ("a || b + c", "((a || b) + c)"),
        ("a || 'x' = b", "((a || 'x') = b)"),
        ("(a OR b) AND c", "((a OR b) AND c)"),
        ("(a + b) * c", "((a + b) * c)"),
    ])
    func precedence(_ text: String, _ shape: String) throws {
        #expect(try DQL.shape(text) == shape)
    }

    @Test("AND and OR chains are flat lists; && is AND", arguments: [
        ("a AND b AND c", "(a AND b AND c)"),
        ("a AND (b AND c)", "(a AND b AND c)"),
        ("a && b && c", "(a AND b AND c)"),
        ("a OR b OR (c OR d)", "(a OR b OR c OR d)"),
    ])
    func flatChains(_ text: String, _ shape: String) throws {
        #expect(try DQL.shape(text) == shape)
    }

    @Test("comparison operators and their spellings", arguments: [
        ("a = 1", "(a = 1)"), ("a == 1", "(a = 1)"), ("a != 1", "(a != 1)"), ("a <> 1", "(a != 1)"),
        ("a < 1", "(a < 1)"), ("a <= 1", "(a <= 1)"), ("a > 1", "(a > 1)"), ("a >= 1", "(a >= 1)"),
        ("a IN [1, 2]", "(a IN [1, 2])"), ("a NOT IN :list", "(a NOT IN :list)"),
        ("a LIKE 'x%'", "(a LIKE 'x%')"), ("a NOT LIKE :p", "(a NOT LIKE :p)"),
        ("a IS NULL", "(a IS NULL)"), ("a IS NOT NULL", "(a IS NOT NULL)"),
        ("a is missing", "(a IS MISSING)"), ("a IS NOT MISSING", "(a IS NOT MISSING)"),
        ("x BETWEEN 1 AND 5 AND y", "((x BETWEEN 1 AND 5) AND y)"),
        ("x NOT BETWEEN a + 1 AND b", "(x NOT BETWEEN (a + 1) AND b)"),
        ("NOT a IN [1]", "(NOT (a IN [1]))"),
    ])
    func comparisons(_ text: String, _ shape: String) throws {
        #expect(try DQL.shape(text) == shape)
    }

    @Test("comparisons do not chain")
    func noChains() throws {
        for text in ["a = b = c", "a < b < c", "a = 1 IS NULL", "a IN [1] IN [2]", "a LIKE 'x' = TRUE"] {
            #expect(throws: DQLError.self, "\(text)") { try DQL.expression(text) }
        }
        #expect(try DQL.shape("(a = b) = c") == "((a = b) = c)")
    }

    @Test("paths: dots, backquotes, bracketed keys and indices; keywords are names after a dot")
    func paths() throws {
        #expect(try DQL.expression("a.b[0]['c d'].e") == .path(DQLPath([.field("a"), .field("b"), .index(0), .field("c d"), .field("e")])))
        #expect(try DQL.shape("a.b[0]['c d'].e") == "a.b[0].`c d`.e")
        #expect(try DQL.shape("_id.part") == "_id.part")
        #expect(try DQL.shape("a.from.select") == "a.from.select")
        #expect(try DQL.shape("`from` = 1") == "(`from` = 1)")
        #expect(try DQL.shape("(a).b") == "a.b")
        #expect(DQLPath([.field("a"), .index(2)]).fieldPath == nil)
        #expect(DQLPath([.field("a"), .field("b")]).fieldPath == ["a", "b"])
    }

    @Test("arguments: :name and $args.name are the same; steps into an argument")
    func arguments() throws {
        #expect(try DQL.shape("color == $args.color") == "(color = :color)")
        #expect(try DQL.shape("$args['odd name']") == "$args['odd name']")
        #expect(try DQL.shape(":doc.a[1]") == "(:doc).a[1]")
        #expect(try DQL.shape("$args.point.x") == "(:point).x")
    }

    @Test("literals: numbers, strings, booleans, null, arrays and objects")
    func literals() throws {
        #expect(try DQL.expression("42") == .literal(.int(42)))
        #expect(try DQL.expression("-9223372036854775808") == .literal(.int(.min)))
        #expect(try DQL.expression("- 5") == .literal(.int(-5)))
        #expect(try DQL.expression("+5") == .literal(.int(5)))
        #expect(try DQL.expression("1.5") == .literal(.double(1.5)))
        #expect(try DQL.expression("1e3") == .literal(.double(1000)))
        #expect(try DQL.expression("'it''s'") == .literal(.string("it's")))
        #expect(try DQL.expression("TRUE") == .literal(.bool(true)))
        #expect(try DQL.expression("false") == .literal(.bool(false)))
        #expect(try DQL.expression("Null") == .literal(.null))
        #expect(try DQL.expression("[1, 'a', [], {}]") == .literal([1, "a", [], [:]]))
        #expect(try DQL.expression("{'a': 1, b: {\"c\": true}, `d e`: null}") == .literal(["a": 1, "b": ["c": true], "d e": nil]))
        // Elements that are not literals keep the literal as an expression.
        #expect(try DQL.shape("[1, :x]") == "[1, :x]")
        #expect(try DQL.shape("{'a': 1, 'b': {'c': :y}}") == "{'a': 1, 'b': {'c': :y}}")
        // `{'a':b}` reads the value b, although the lexer sees `:b`.
        #expect(try DQL.shape("{'a':b}") == "{'a': b}")
    }

    @Test("integer literals are exact and must fit in 64 bits")
    func integerRange() throws {
        #expect(try DQL.expression("9223372036854775807") == .literal(.int(.max)))
        #expect(throws: DQLError.self) { try DQL.expression("9223372036854775808") }
        #expect(throws: DQLError.self) { try DQL.expression("-9223372036854775809") }
    }

    @Test("function names are case-insensitive and have aliases")
    func functionNames() throws {
        #expect(try DQL.shape("LOWER(a)") == "lower(a)")
        #expect(try DQL.shape("StartsWith(a, 'x')") == "starts_with(a, 'x')")
        #expect(try DQL.shape("char_length(a) + endswith(b, 'c')") == "(length(a) + ends_with(b, 'c'))")
        #expect(try DQL.shape("coalesce(a, b, 'c')") == "coalesce(a, b, 'c')")
        #expect(try DQL.shape("type = 'car'") == "(type = 'car')")
    }

    @Test("unknown functions and wrong arity are errors at the function name")
    func functionErrors() throws {
        do {
            _ = try DQL.expression("a = frobnicate(b)")
            Issue.record("expected an error")
        } catch {
            #expect(error.kind == .unknownFunction)
            #expect(error.column == 5)
        }
        do {
            _ = try DQL.expression("x AND length(a, b)")
            Issue.record("expected an error")
        } catch {
            #expect(error.description == "line 1, column 7: length takes 1 argument, not 2")
        }
        #expect(throws: DQLError.self) { try DQL.expression("coalesce()") }
        #expect(throws: DQLError.self) { try DQL.expression("contains('a')") }
    }

    @Test("a printed expression parses back to the same tree")
    func roundTrip() throws {
        let texts = [
            "a.b = 1 AND (c OR NOT d) OR e IN [1, 2.5, 'x'] AND f NOT LIKE 'a\\_%'",
            "x BETWEEN -1 AND :hi OR y IS NOT MISSING OR z IS NULL",
            "lower(name) || ' ' || upper(`last name`) = $args['full name']",
            "a - -5 = - (b * c) % 3",
            "{'k': [a, {'n': b[2]}], 'it''s': 'x'}.k[0] = 1",
            "`select`.`from` = true AND `x y` != null",
        ]
        for text in texts {
            let printed = try DQL.shape(text)
            #expect(try DQL.shape(printed) == printed, "\(text)")
            #expect(try DQL.expression(printed).description == DQL.expression(text).description)
        }
    }
}
