import ArcusCRDT
import Testing

@testable import ArcusStore

@Suite("DQL functions")
struct DQLFunctionTests {
    static let doc: Value = ["name": "Zoë Smith", "tags": ["a", "b", 1], "n": nil, "obj": ["x": 1, "y": 2], "bin": .binary([1, 2, 3])]

    @Test("length counts Unicode scalars of strings, elements of arrays, fields of objects, bytes of binary")
    func length() throws {
        #expect(try DQL.eval("length(name)", Self.doc) == 9)
        #expect(try DQL.eval("char_length('')") == 0)
        #expect(try DQL.eval("length('e\u{301}')") == 2)  // e + combining accent: two scalars
        #expect(try DQL.eval("length(tags)", Self.doc) == 3)
        #expect(try DQL.eval("length(obj)", Self.doc) == 2)
        #expect(try DQL.eval("length(bin)", Self.doc) == 3)
        #expect(try DQL.eval("length(5)") == .null)
        #expect(try DQL.eval("length(n)", Self.doc) == .null)
        #expect(try DQL.eval("length(nothing)", Self.doc) == nil)
    }

    @Test("lower and upper map case, also beyond ASCII")
    func caseMapping() throws {
        #expect(try DQL.eval("lower(name)", Self.doc) == "zoë smith")
        #expect(try DQL.eval("upper(name)", Self.doc) == "ZOË SMITH")
        #expect(try DQL.eval("lower(1)") == .null)
        #expect(try DQL.matches("lower(name) = 'zoë smith'", Self.doc))
    }

    @Test("contains works on strings and on arrays")
    func contains() throws {
        #expect(try DQL.eval("contains(name, 'ë Sm')", Self.doc) == true)
        #expect(try DQL.eval("contains(name, 'zo')", Self.doc) == false)  // case-sensitive
        #expect(try DQL.eval("contains(name, '')", Self.doc) == true)
        #expect(try DQL.eval("contains(tags, 'b')", Self.doc) == true)
        #expect(try DQL.eval("contains(tags, 1.0)", Self.doc) == true)
        #expect(try DQL.eval("contains(tags, 'c')", Self.doc) == false)
        #expect(try DQL.eval("contains(name, 1)", Self.doc) == .null)
        #expect(try DQL.eval("contains(5, 1)") == .null)
    }

    @Test("starts_with and ends_with")
    func prefixes() throws {
        #expect(try DQL.eval("starts_with(name, 'Zoë')", Self.doc) == true)
        #expect(try DQL.eval("startswith(name, 'Smith')", Self.doc) == false)
        #expect(try DQL.eval("ends_with(name, 'Smith')", Self.doc) == true)
        #expect(try DQL.eval("ENDSWITH(name, 'Zoë')", Self.doc) == false)
        #expect(try DQL.eval("starts_with(name, '')", Self.doc) == true)
        #expect(try DQL.eval("ends_with('a', 'ba')") == false)
        #expect(try DQL.eval("starts_with(1, 'a')") == .null)
    }

    @Test("array_contains uses DQL equality")
    func arrayContains() throws {
        #expect(try DQL.eval("array_contains(tags, 'a')", Self.doc) == true)
        #expect(try DQL.eval("array_contains(tags, 2)", Self.doc) == false)
        #expect(try DQL.eval("array_contains([{'a': 1}], {'a': 1.0})") == true)
        #expect(try DQL.eval("array_contains('abc', 'a')") == .null)
        #expect(try DQL.eval("array_contains(tags, nothing)", Self.doc) == nil)
    }

    @Test("coalesce returns the first value that is neither MISSING nor NULL")
    func coalesce() throws {
        #expect(try DQL.eval("coalesce(nothing, n, 'x', 'y')", Self.doc) == "x")
        #expect(try DQL.eval("coalesce(name, 'x')", Self.doc) == "Zoë Smith")
        #expect(try DQL.eval("coalesce(nothing, n)", Self.doc) == .null)
        #expect(try DQL.eval("coalesce(nothing)", Self.doc) == .null)
    }

    @Test("type names the kind of a value, MISSING included")
    func type() throws {
        let cases: [(String, String)] = [
            ("name", "string"), ("1", "number"), ("1.5", "number"), ("true", "boolean"), ("n", "null"),
            ("tags", "array"), ("obj", "object"), ("bin", "binary"), ("nothing", "missing"),
        ]
        for (argument, name) in cases {
            #expect(try DQL.eval("type(\(argument))", Self.doc) == .string(name), "\(argument)")
        }
    }

    @Test("functions propagate MISSING before NULL")
    func propagation() throws {
        #expect(try DQL.eval("upper(nothing)", Self.doc) == nil)
        #expect(try DQL.eval("upper(n)", Self.doc) == .null)
        #expect(try DQL.eval("contains(n, nothing)", Self.doc) == nil)
        #expect(try DQL.eval("starts_with(n, 'a')", Self.doc) == .null)
    }
}
