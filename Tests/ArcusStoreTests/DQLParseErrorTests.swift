import ArcusCRDT
import Testing

@testable import ArcusStore

/// Malformed statements give one error naming the line and column and what was expected there.
@Suite("DQL parse errors")
struct DQLParseErrorTests {
    @Test("each malformed statement gives its exact message", arguments: [
        ("SELECT * FORM cars", "line 1, column 10: expected FROM after the projection, found 'FORM'"),
        ("SELEC * FROM cars", "line 1, column 1: unknown statement 'SELEC': expected SELECT, INSERT, UPDATE, DELETE, EVICT, CREATE INDEX, DROP INDEX, EXPLAIN, PROFILE, SHOW or ALTER SYSTEM"),
        ("", "line 1, column 1: empty statement: expected SELECT, INSERT, UPDATE, DELETE, EVICT, CREATE INDEX, DROP INDEX, EXPLAIN, PROFILE, SHOW or ALTER SYSTEM"),
        ("SELECT * FROM cars WHERE", "line 1, column 25: expected an expression, found end of input"),
        ("SELECT * FROM cars WHERE color = 'red", "line 1, column 34: unterminated string: no closing ' for the string that starts here"),
        ("SELECT * FROM cars WHER color = 'red'", "line 1, column 20: expected WHERE, GROUP BY, ORDER BY, LIMIT, OFFSET or the end of the statement, found 'WHER'"),
        ("SELECT *\nFROM cars\nWHERE (a = 1", "line 3, column 13: expected ')' to close the '(' at line 3, column 7, found end of input"),
        ("SELECT FROM cars", "line 1, column 8: expected '*' or a list of expressions after SELECT, found 'FROM'"),
        ("SELECT * FROM cars WHERE a = 12x", "line 1, column 30: invalid number '12x'"),
        ("SELECT * FROM cars ORDER year", "line 1, column 26: expected BY after ORDER, found 'year'"),
        ("SELECT * FROM cars LIMIT 'ten'", "line 1, column 26: expected a non-negative integer or an argument after LIMIT, found string 'ten'"),
        ("SELECT * FROM cars; SELECT * FROM boats", "line 1, column 21: expected the end of input after ';' (one statement at a time), found 'SELECT'"),
        ("SELECT * FROM cars WHERE color = \"red\"", "line 1, column 34: double-quoted text is not a string in DQL: write 'text' for a string or `text` for a field name"),
        ("SELECT * FROM cars WHERE a IS 5", "line 1, column 31: expected NULL, MISSING or NOT after IS, found number 5"),
        ("SELECT * FROM cars WHERE a = 1 AND", "line 1, column 35: expected an expression, found end of input"),
        ("SELECT * FROM cars WHERE a IN [1, 2", "line 1, column 36: expected ']' or ',' in the array that starts at line 1, column 31, found end of input"),
        ("SELECT * FROM cars WHERE x = {'a' 1}", "line 1, column 35: expected ':' after the key 'a', found number 1"),
        ("SELECT * FROM cars WHERE x = {'a': 1, 'a': 2}", "line 1, column 39: the key 'a' appears twice in the object"),
        ("SELECT * FROM where", "line 1, column 15: expected a collection name after FROM, found 'where' (a keyword; write `where` in backquotes to use it as a name)"),
        ("SELECT * FROM cars WHERE from = 1", "line 1, column 26: expected an expression, found keyword 'from' (write `from` in backquotes to use it as a field name)"),
        ("SELECT * FROM cars WHERE $foo = 1", "line 1, column 26: unknown variable $foo; arguments are written $args.name or :name"),
        ("SELECT * FROM cars WHERE a[-1] = 1", "line 1, column 28: expected an array index (a non-negative integer) or a quoted field name inside [ ], found '-'"),
        ("SELECT * FROM COLLECTION cars (features BLOB)", "line 1, column 41: expected a field type (MAP, REGISTER, PN_COUNTER or ATTACHMENT) after 'features', found 'BLOB'"),
        ("INSERT INTO cars (:doc)", "line 1, column 19: expected a field name in the field types, found argument :doc"),
        ("INSERT INTO cars DOCUMENTS :doc", "line 1, column 28: expected '(' before a document, found argument :doc"),
        ("UPDATE cars SET color 'blue'", "line 1, column 23: expected '=' after 'color', found string 'blue'"),
        ("UPDATE c APPLY n PN_INCREMENT 1", "line 1, column 31: expected BY after PN_INCREMENT, found number 1"),
        ("DELETE cars WHERE a = 1", "line 1, column 8: expected FROM after DELETE, found 'cars'"),
        ("CREATE INDEX ON cars (a)", "line 1, column 17: expected ON after the index name, found 'cars'"),
        ("DROP TABLE x", "line 1, column 6: expected INDEX after DROP, found 'TABLE'"),
        ("SELECT * FROM cars /* never closed", "line 1, column 20: unterminated comment: no closing */ for the comment that starts here"),
        ("SELECT *, a FROM cars", "line 1, column 9: '*' cannot be combined with other projections"),
    ])
    func message(_ text: String, _ expected: String) {
        #expect(DQL.parseError(text)?.description == expected)
    }

    @Test("errors carry a kind for programs to act on")
    func kinds() {
        #expect(DQL.parseError("FETCH * FROM c")?.kind == .unknownStatement)
        #expect(DQL.parseError("SELECT * FROM c WHERE a = 'x")?.kind == .unterminated)
        #expect(DQL.parseError("SELECT * FROM c WHERE a = 1e")?.kind == .invalidNumber)
        #expect(DQL.parseError("SELECT * FROM c WHERE nope(a)")?.kind == .unknownFunction)
        #expect(DQL.parseError("SELECT * FROM c WHERE lower()")?.kind == .wrongArity)
        #expect(DQL.parseError("SELECT * FROM c WHERE a = 1 2")?.kind == .syntax)
    }

    @Test("line and column point into later lines, counting characters not bytes")
    func multiLine() {
        let error = DQL.parseError("SELECT *\n  FROM cars\n  WHERE naïve = 'é' AND ¿")
        #expect(error?.line == 3)
        #expect(error?.column == 25)
        #expect(error?.kind == .invalidCharacter)
    }
}
