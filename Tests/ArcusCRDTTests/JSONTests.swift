import ArcusCRDT
import ArcusTestSupport
import Testing

@Suite("JSON text")
struct JSONTests {
    @Test("compact text, sorted keys, exact integers, escapes", arguments: [
        (Value.null, "null"),
        (true, "true"),
        (0, "0"),
        (7, "7"),
        (-7, "-7"),
        (1234567890, "1234567890"),
        (.int(.max), "9223372036854775807"),
        (.int(.min), "-9223372036854775808"),
        (1.5, "1.5"),
        (.double(1e-5), "1e-05"),
        ("", "\"\""),
        ("quote \" back \\ slash", #""quote \" back \\ slash""#),
        ("\n\r\t\u{01}\u{1F}", #""\n\r\t\u0001\u001f""#),
        ("✓ ünïcode 🚀", "\"✓ ünïcode 🚀\""),
        (["b": 1, "a": [1, "x", ["z": nil, "y": false]], "_id": "k"], #"{"_id":"k","a":[1,"x",{"y":false,"z":null}],"b":1}"#),
        (.binary([1, 2, 3]), #"{"$binary":"AQID"}"#),
        ([], "[]"),
        ([:], "{}"),
    ] as [(Value, String)])
    func writes(value: Value, text: String) throws {
        #expect(value.jsonString == text)
        #expect(try Value(json: text) == value)
    }

    @Test("random values survive writing and reading", arguments: SeededRandom.seeds(count: 4, test: "json-round-trip"))
    func roundTrip(seed: UInt64) throws {
        print("json-round-trip seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        for _ in 0..<2000 {
            var value = RandomMutations.value(&rng)
            if case .string = value, Bool.random(using: &rng) {
                // Every byte below 0x80, escapes and all.
                value = .string(String(decoding: (0..<Int.random(in: 0...12, using: &rng)).map { _ in UInt8.random(in: 0..<0x80, using: &rng) }, as: UTF8.self))
            }
            let text = value.jsonString
            #expect(try Value(json: text) == value, "\(text)")
        }
    }

    @Test("a document's visible JSON equals its value's, with the _id in its sorted place", arguments: SeededRandom.seeds(count: 4, test: "visible-json"))
    func visibleJSON(seed: UInt64) throws {
        print("visible-json seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let sites = [SiteID(1), SiteID(2), SiteID(3)]
        var live = 0
        for _ in 0..<500 {
            let state = RandomMutations.document(&rng, mutations: Int.random(in: 0...30, using: &rng), sites: sites)
            // Before, between and after the random names, and equal to one of them.
            let extraName = ["_id", "a", "owner", "zzz"].randomElement(using: &rng)!
            let extra = RandomMutations.value(&rng)
            let expected = state.value.map { value -> String in
                guard case .object(var fields) = value else { return value.jsonString }
                fields[extraName] = extra
                return Value.object(fields).jsonString
            }
            #expect(state.visibleJSON(adding: (extraName, extra)) == expected)
            #expect(state.visibleJSON() == state.value?.jsonString)
            if expected != nil { live += 1 }
        }
        #expect(live > 100, "too few live documents to test anything")
    }
}
