import ArcusCRDT
import Testing

@testable import ArcusStore

/// What expressions evaluate to. `nil` is MISSING; `.null` is NULL.
@Suite("DQL evaluation")
struct DQLEvaluatorTests {
    static let car: Value = [
        "_id": ["vin": "V1", "site": 7],
        "make": "Hyundai",
        "year": 2018,
        "price": 12500.5,
        "color": nil,
        "tags": ["blue", "used", 3],
        "owner": ["name": "Ada", "address": ["city": "Paris"]],
        "weird key": true,
    ]

    // MARK: Paths

    @Test("paths read fields, nested fields, array elements and _id parts")
    func paths() throws {
        #expect(try DQL.eval("make", Self.car) == "Hyundai")
        #expect(try DQL.eval("owner.address.city", Self.car) == "Paris")
        #expect(try DQL.eval("owner['name']", Self.car) == "Ada")
        #expect(try DQL.eval("`weird key`", Self.car) == true)
        #expect(try DQL.eval("tags[1]", Self.car) == "used")
        #expect(try DQL.eval("_id.vin", Self.car) == "V1")
        #expect(try DQL.eval("_id", Self.car) == ["vin": "V1", "site": 7])
    }

    @Test("a path that finds nothing is MISSING, not NULL")
    func missingPaths() throws {
        #expect(try DQL.eval("model", Self.car) == nil)
        #expect(try DQL.eval("owner.phone", Self.car) == nil)
        #expect(try DQL.eval("make.length", Self.car) == nil)  // into a string
        #expect(try DQL.eval("tags[3]", Self.car) == nil)  // out of bounds
        #expect(try DQL.eval("owner[0]", Self.car) == nil)  // index into an object
        #expect(try DQL.eval("color", Self.car) == .null)  // present, null
        #expect(try DQL.eval("color.x", Self.car) == nil)
    }

    // MARK: Comparison

    @Test("equality: numbers by value across int and double, structural arrays and objects")
    func equality() throws {
        #expect(try DQL.eval("year = 2018", Self.car) == true)
        #expect(try DQL.eval("year = 2018.0", Self.car) == true)
        #expect(try DQL.eval("year == 2018", Self.car) == true)
        #expect(try DQL.eval("year != 2019", Self.car) == true)
        #expect(try DQL.eval("year <> 2018", Self.car) == false)
        #expect(try DQL.eval("_id = {'site': 7.0, 'vin': 'V1'}", Self.car) == true)
        #expect(try DQL.eval("tags = ['blue', 'used', 3]", Self.car) == true)
        #expect(try DQL.eval("tags = ['used', 'blue', 3]", Self.car) == false)
        #expect(try DQL.eval("[1, [2, {'a': 3}]] = [1.0, [2, {'a': 3.0}]]") == true)
        #expect(try DQL.eval("{'a': 1} = {'a': 1, 'b': 2}") == false)
        #expect(try DQL.eval("'abc' = 'abc'") == true)
        #expect(try DQL.eval("'abc' = 'ABC'") == false)
        #expect(try DQL.eval("true = true") == true)
    }

    @Test("comparing different kinds: = is false, != is true, ordering is NULL")
    func crossKind() throws {
        #expect(try DQL.eval("'1' = 1") == false)
        #expect(try DQL.eval("'1' != 1") == true)
        #expect(try DQL.eval("true = 1") == false)
        #expect(try DQL.eval("'1' < 2") == .null)
        #expect(try DQL.eval("[1] >= 1") == .null)
        #expect(try DQL.matches("make > 5", Self.car) == false)
        #expect(try DQL.matches("NOT (make > 5)", Self.car) == false)
    }

    @Test("ordering comparisons within a kind")
    func ordering() throws {
        #expect(try DQL.eval("1 < 2") == true)
        #expect(try DQL.eval("2 <= 2.0") == true)
        #expect(try DQL.eval("2.5 > 2") == true)
        #expect(try DQL.eval("-1 >= 0") == false)
        #expect(try DQL.eval("'apple' < 'banana'") == true)
        #expect(try DQL.eval("'Zebra' < 'apple'") == true)  // Unicode scalar order: capitals first
        #expect(try DQL.eval("'é' > 'z'") == true)
        #expect(try DQL.eval("'ab' < 'abc'") == true)
        #expect(try DQL.eval("false < true") == true)
        #expect(try DQL.eval("[1, 2] < [1, 3]") == true)
        #expect(try DQL.eval("[1, 2] < [1, 2, 0]") == true)
    }

    @Test("large integers compare exactly with doubles")
    func exactNumbers() throws {
        // 2^53 + 1 is not a double; comparing through Double would call these equal.
        #expect(try DQL.eval("9007199254740993 = 9007199254740992.0") == false)
        #expect(try DQL.eval("9007199254740993 > 9007199254740992.0") == true)
        #expect(try DQL.eval("9223372036854775807 < 9223372036854775808.0") == true)
        #expect(try DQL.eval("-9223372036854775808 = -9223372036854775808.0") == true)
        #expect(try DQL.eval("3 < 3.5 AND 4 > 3.5 AND -3 > -3.5") == true)
    }

    @Test("comparisons with NULL are NULL and with MISSING are MISSING")
    func nullAndMissingComparisons() throws {
        #expect(try DQL.eval("color = 'red'", Self.car) == .null)
        #expect(try DQL.eval("color = null", Self.car) == .null)
        #expect(try DQL.eval("color != 'red'", Self.car) == .null)
        #expect(try DQL.eval("model = 'x'", Self.car) == nil)
        #expect(try DQL.eval("model != 'x'", Self.car) == nil)
        #expect(try DQL.eval("model < color", Self.car) == nil)
        #expect(try DQL.matches("color != 'red'", Self.car) == false)
        #expect(try DQL.matches("model != 'x'", Self.car) == false)
    }

    // MARK: Logic

    @Test("three-valued AND, OR and NOT, with MISSING")
    func logic() throws {
        let doc: Value = ["t": true, "f": false, "n": nil]
        let table: [(String, Value?)] = [
            ("t AND t", true), ("t AND f", false), ("f AND n", false), ("n AND f", false), ("f AND m", false),
            ("t AND n", .null), ("t AND m", nil), ("n AND m", nil),
            ("t OR f", true), ("f OR f", false), ("n OR t", true), ("m OR t", true),
            ("f OR n", .null), ("f OR m", nil), ("n OR m", nil),
            ("NOT t", false), ("NOT f", true), ("NOT n", .null), ("NOT m", nil),
            ("t AND 1", .null), ("NOT 'x'", .null),
        ]
        for (text, expected) in table {
            #expect(try DQL.eval(text, doc) == expected, "\(text)")
        }
    }

    @Test("WHERE matches only when the condition is exactly true")
    func whereTruth() throws {
        let doc: Value = ["a": 1, "n": nil]
        #expect(try DQL.matches("a = 1", doc))
        #expect(try !DQL.matches("a = 2", doc))
        #expect(try !DQL.matches("n = 1", doc))
        #expect(try !DQL.matches("NOT (n = 1)", doc))
        #expect(try !DQL.matches("missing_field = 1", doc))
        #expect(try !DQL.matches("NOT (missing_field = 1)", doc))
        #expect(try !DQL.matches("a", doc))  // a number is not true
        #expect(try DQLEvaluator.matches(where: nil, document: doc, arguments: [:]))
    }

    // MARK: IN, IS, BETWEEN

    @Test("IN and NOT IN follow SQL: a NULL in the list makes a non-match unknown")
    func inList() throws {
        let doc: Value = ["a": 2, "s": "x", "n": nil]
        #expect(try DQL.eval("a IN [1, 2, 3]", doc) == true)
        #expect(try DQL.eval("a IN [1.0, 2.0]", doc) == true)
        #expect(try DQL.eval("a IN [1, 3]", doc) == false)
        #expect(try DQL.eval("a IN []", doc) == false)
        #expect(try DQL.eval("a NOT IN [1, 3]", doc) == true)
        #expect(try DQL.eval("a IN [1, null]", doc) == .null)
        #expect(try DQL.eval("a IN [2, null]", doc) == true)
        #expect(try DQL.eval("a NOT IN [1, null]", doc) == .null)
        #expect(try DQL.eval("n IN [1, null]", doc) == .null)
        #expect(try DQL.eval("z IN [1]", doc) == nil)
        #expect(try DQL.eval("a IN 2", doc) == .null)
        #expect(try DQL.eval("a IN :list", doc, ["list": [5, 2]]) == true)
        #expect(try DQL.eval("s IN ['x', 'y']", doc) == true)
        #expect(try DQL.eval("[1, 2] IN [[1, 2], [3]]", doc) == true)
    }

    @Test("IS NULL and IS MISSING tell NULL and MISSING apart")
    func isNullIsMissing() throws {
        let doc: Value = ["a": 1, "n": nil]
        #expect(try DQL.eval("n IS NULL", doc) == true)
        #expect(try DQL.eval("a IS NULL", doc) == false)
        #expect(try DQL.eval("z IS NULL", doc) == nil)
        #expect(try DQL.eval("n IS NOT NULL", doc) == false)
        #expect(try DQL.eval("a IS NOT NULL", doc) == true)
        #expect(try DQL.eval("z IS NOT NULL", doc) == nil)
        #expect(try DQL.eval("z IS MISSING", doc) == true)
        #expect(try DQL.eval("n IS MISSING", doc) == false)
        #expect(try DQL.eval("a IS NOT MISSING", doc) == true)
        #expect(try DQL.eval("z IS NOT MISSING", doc) == false)
    }

    @Test("BETWEEN is inclusive at both ends")
    func between() throws {
        let doc: Value = ["a": 5, "s": "m"]
        #expect(try DQL.eval("a BETWEEN 5 AND 10", doc) == true)
        #expect(try DQL.eval("a BETWEEN 1 AND 5", doc) == true)
        #expect(try DQL.eval("a BETWEEN 6 AND 10", doc) == false)
        #expect(try DQL.eval("a NOT BETWEEN 6 AND 10", doc) == true)
        #expect(try DQL.eval("s BETWEEN 'a' AND 'z'", doc) == true)
        #expect(try DQL.eval("a BETWEEN 'a' AND 10", doc) == .null)
        #expect(try DQL.eval("z BETWEEN 1 AND 10", doc) == nil)
    }

    // MARK: Arithmetic

    @Test("arithmetic on numbers keeps integers exact")
    func arithmetic() throws {
        #expect(try DQL.eval("1 + 2 * 3") == 7)
        #expect(try DQL.eval("(1 + 2) * 3") == 9)
        #expect(try DQL.eval("10 - 4 - 3") == 3)
        #expect(try DQL.eval("7 / 2") == 3.5)
        #expect(try DQL.eval("8 / 2") == 4)
        #expect(try DQL.eval("-7 % 3") == -1)
        #expect(try DQL.eval("7.5 % 2") == 1.5)
        #expect(try DQL.eval("1 + 0.5") == 1.5)
        #expect(try DQL.eval("-year", ["year": 2018]) == -2018)
        #expect(try DQL.eval("- price", ["price": 1.5]) == -1.5)
    }

    @Test("integer overflow becomes a double instead of trapping")
    func overflow() throws {
        #expect(try DQL.eval("9223372036854775807 + 1") == .double(9_223_372_036_854_775_808.0))
        #expect(try DQL.eval("-9223372036854775808 - 1") == .double(-9_223_372_036_854_775_808.0))
        #expect(try DQL.eval("9223372036854775807 * 2") == .double(18_446_744_073_709_551_614.0))
        #expect(try DQL.eval("-9223372036854775808 / -1") == .double(9_223_372_036_854_775_808.0))
        #expect(try DQL.eval("-9223372036854775808 % -1") == 0)
        #expect(try DQL.eval("-x", ["x": .int(.min)]) == .double(9_223_372_036_854_775_808.0))
    }

    @Test("division by zero, non-finite results and non-numbers give NULL; MISSING propagates")
    func arithmeticUnknowns() throws {
        #expect(try DQL.eval("1 / 0") == .null)
        #expect(try DQL.eval("1.5 / 0") == .null)
        #expect(try DQL.eval("1 % 0") == .null)
        #expect(try DQL.eval("1e308 * 10") == .null)
        #expect(try DQL.eval("1 + 'a'") == .null)
        #expect(try DQL.eval("1 + null") == .null)
        #expect(try DQL.eval("1 + nothing") == nil)
        #expect(try DQL.eval("-'a'") == .null)
        #expect(try DQL.eval("-nothing") == nil)
    }

    @Test("+ and || join strings")
    func concatenation() throws {
        #expect(try DQL.eval("'a' + 'b'") == "ab")
        #expect(try DQL.eval("first || ' ' || last", ["first": "Ada", "last": "Lovelace"]) == "Ada Lovelace")
        #expect(try DQL.eval("'a' || 1") == .null)
        #expect(try DQL.eval("1 || 2") == .null)
        #expect(try DQL.eval("'a' || nothing") == nil)
    }

    // MARK: Literals

    @Test("array and object literals evaluate their elements")
    func literals() throws {
        let doc: Value = ["a": 1]
        #expect(try DQL.eval("[a, a + 1, nothing]", doc) == [1, 2, nil])
        #expect(try DQL.eval("{'x': a, 'y': nothing, 'z': {'w': a * 10}}", doc) == ["x": 1, "z": ["w": 10]])
        #expect(try DQL.eval("{'k': [a, 2]}.k[0]", doc) == 1)
    }
}
