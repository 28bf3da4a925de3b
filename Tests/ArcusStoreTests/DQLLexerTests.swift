import ArcusCRDT
import Testing

@testable import ArcusStore

@Suite("DQL lexer")
struct DQLLexerTests {
    private func kinds(_ text: String) throws -> [DQLToken.Kind] {
        try DQLLexer.tokenize(text).map(\.kind)
    }

    @Test("keywords are bare words recognised in any letter case; names keep their case")
    func keywords() throws {
        let tokens = try DQLLexer.tokenize("select Select SELECT Cars")
        #expect(tokens.prefix(3).allSatisfy { $0.keyword == .select })
        #expect(tokens[3].kind == .identifier("Cars"))
        #expect(tokens[3].keyword == nil)
    }

    @Test("single-quoted strings double a quote to contain one")
    func strings() throws {
        #expect(try kinds("'it''s' ''") == [.string("it's"), .string(""), .end])
        #expect(try kinds("'multi\nline'") == [.string("multi\nline"), .end])
    }

    @Test("backquoted names may hold spaces, keywords and doubled backquotes")
    func quotedNames() throws {
        #expect(try kinds("`weird name` `from` `a``b`") == [
            .quotedIdentifier("weird name"), .quotedIdentifier("from"), .quotedIdentifier("a`b"), .end,
        ])
    }

    @Test("integers are exact magnitudes; fractions and exponents make decimals")
    func numbers() throws {
        #expect(try kinds("0 42 18446744073709551615") == [.integer(0), .integer(42), .integer(.max), .end])
        #expect(try kinds("1.5 2e3 2E-3 1.25e+2") == [.decimal(1.5), .decimal(2000), .decimal(0.002), .decimal(125), .end])
        // A dot not followed by a digit is punctuation.
        #expect(try kinds("a[1].b") == [.identifier("a"), .symbol(.leftBracket), .integer(1), .symbol(.rightBracket), .symbol(.dot), .identifier("b"), .end])
    }

    @Test(":name and $name are arguments and variables; a lone colon is punctuation")
    func arguments() throws {
        #expect(try kinds(":color $args.color") == [.parameter("color"), .variable("args"), .symbol(.dot), .identifier("color"), .end])
        #expect(try kinds("{'n': 1}") == [.symbol(.leftBrace), .string("n"), .symbol(.colon), .integer(1), .symbol(.rightBrace), .end])
    }

    @Test("operators, longest match first")
    func operators() throws {
        #expect(try kinds("= == != <> < <= > >= || && + - * / %").compactMap {
            if case .symbol(let s) = $0 { return s.rawValue } else { return nil }
        } == ["=", "==", "!=", "<>", "<", "<=", ">", ">=", "||", "&&", "+", "-", "*", "/", "%"])
    }

    @Test("comments and whitespace separate tokens")
    func comments() throws {
        #expect(try kinds("a -- to the end of the line\n/* a block\n comment */ b") == [.identifier("a"), .identifier("b"), .end])
    }

    @Test("positions are 1-based lines and columns counted in Unicode scalars")
    func positions() throws {
        let tokens = try DQLLexer.tokenize("SELECT *\n  FROM `café` WHERE x = 'é'")
        #expect(tokens.map(\.position.line) == [1, 1, 2, 2, 2, 2, 2, 2, 2])
        #expect(tokens.map(\.position.column) == [1, 8, 3, 8, 15, 21, 23, 25, 28])
    }

    @Test("names may use letters beyond ASCII")
    func unicodeNames() throws {
        #expect(try kinds("prénom = 'Zoë'") == [.identifier("prénom"), .symbol(.equal), .string("Zoë"), .end])
    }

    @Test("malformed tokens are errors with their position")
    func errors() throws {
        func error(_ text: String) -> DQLError? {
            do { _ = try DQLLexer.tokenize(text); return nil } catch { return error }
        }
        #expect(error("x = 'open")?.description == "line 1, column 5: unterminated string: no closing ' for the string that starts here")
        #expect(error("`open")?.kind == .unterminated)
        #expect(error("/* open")?.kind == .unterminated)
        #expect(error("12abc")?.description == "line 1, column 1: invalid number '12abc'")
        #expect(error("1e+")?.description == "line 1, column 1: invalid number '1e+': the exponent has no digits")
        #expect(error("99999999999999999999")?.kind == .invalidNumber)
        #expect(error("1e999")?.description == "line 1, column 1: number 1e999 is out of range")
        #expect(error("a ! b")?.description == "line 1, column 3: unexpected character '!'; use NOT or !=")
        #expect(error("a # b")?.kind == .invalidCharacter)
        #expect(error("$ x")?.kind == .invalidCharacter)
        #expect(error("a\u{1} b")?.description == "line 1, column 2: unexpected character 'U+1'")
        #expect(error("``")?.description == "line 1, column 1: a quoted name cannot be empty")
    }
}
