import ArcusCRDT
import Testing

@testable import ArcusStore

@Suite("DQL LIKE")
struct DQLLikeTests {
    @Test("% matches any run, _ exactly one character", arguments: [
        ("abc", "abc", true), ("abc", "ab", false), ("abc", "abcd", false),
        ("abc", "a%", true), ("abc", "%c", true), ("abc", "%b%", true), ("abc", "%", true), ("", "%", true),
        ("", "_", false), ("abc", "a_c", true), ("abc", "a__", true), ("abc", "____", false), ("abc", "_%_", true),
        ("abc", "%%c", true), ("banana", "%an%an%", true), ("banana", "b%n_", true), ("banana", "%nan", false),
        ("aaaaaaaaaaaaaaaaaaaaaaaab", "%a%a%a%a%a%a%a%c", false), ("mississippi", "m%iss%pi", true),
    ])
    func wildcards(_ text: String, _ pattern: String, _ expected: Bool) {
        #expect(DQLLikePattern(pattern).matches(text) == expected, "'\(text)' LIKE '\(pattern)'")
    }

    @Test("_ matches one Unicode scalar, whatever its UTF-8 length")
    func unicode() {
        #expect(DQLLikePattern("caf_").matches("café"))
        #expect(DQLLikePattern("_").matches("😀"))
        #expect(!DQLLikePattern("__").matches("😀"))
        #expect(DQLLikePattern("%é").matches("résumé"))
        #expect(DQLLikePattern("r_sum_").matches("résumé"))
        #expect(!DQLLikePattern("r_sum_").matches("résumés"))
    }

    @Test("regular-expression metacharacters are plain characters", arguments: [
        ("a.c", "a.c", true), ("abc", "a.c", false), ("a*c", "a*c", true), ("aac", "a*c", false),
        ("(x)", "(x)", true), ("[ab]", "[ab]", true), ("a", "[ab]", false), ("^a$", "^a$", true),
        ("a+b?", "a+b?", true), ("aab", "a+b?", false), ("x|y", "x|y", true), ("x", "x|y", false),
        ("{1}", "{1}", true), ("a\\d", "a\\\\d", true), ("a1", "a\\d", false),
    ])
    func metacharacters(_ text: String, _ pattern: String, _ expected: Bool) {
        #expect(DQLLikePattern(pattern).matches(text) == expected, "'\(text)' LIKE '\(pattern)'")
    }

    @Test("a backslash escapes %, _ and itself")
    func escapes() {
        #expect(DQLLikePattern("100\\%").matches("100%"))
        #expect(!DQLLikePattern("100\\%").matches("1000"))
        #expect(DQLLikePattern("a\\_b").matches("a_b"))
        #expect(!DQLLikePattern("a\\_b").matches("axb"))
        #expect(DQLLikePattern("a\\\\b").matches("a\\b"))
        #expect(DQLLikePattern("a\\").matches("a\\"))  // a trailing backslash is literal
        #expect(DQLLikePattern("%\\%%").matches("50% off"))
    }

    @Test("LIKE in expressions: case-sensitive, strings only, NOT LIKE, argument patterns")
    func expressions() throws {
        let doc: Value = ["name": "Ada Lovelace", "n": 5, "z": nil]
        #expect(try DQL.eval("name LIKE 'Ada%'", doc) == true)
        #expect(try DQL.eval("name LIKE 'ada%'", doc) == false)
        #expect(try DQL.eval("name NOT LIKE '%Byron'", doc) == true)
        #expect(try DQL.eval("name LIKE :p", doc, ["p": "%Love%"]) == true)
        #expect(try DQL.eval("n LIKE '5'", doc) == .null)
        #expect(try DQL.eval("z LIKE '%'", doc) == .null)
        #expect(try DQL.eval("missing LIKE '%'", doc) == nil)
        #expect(try DQL.eval("name LIKE 5", doc) == .null)
        // A literal pattern is compiled once, at parse time.
        guard case .like(_, _, let compiled?, _) = try DQL.expression("name LIKE 'A%'") else {
            Issue.record("expected a compiled pattern"); return
        }
        #expect(compiled == DQLLikePattern("A%"))
    }
}
