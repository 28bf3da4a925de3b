import ArcusCRDT
import ArcusTestSupport
import Testing
@testable import ArcusCodec

@Suite("Value encoding")
struct ValueCodingTests {
    func roundTrip(_ value: Value) throws -> (Value, Int) {
        var context = EncodingContext()
        var w = ByteWriter()
        context.writeValue(value, to: &w)
        var decoding = DecodingContext()
        var r = ByteReader(w.bytes)
        let decoded = try decoding.readValue(from: &r)
        try r.expectEnd()
        return (decoded, w.count)
    }

    @Test("every kind of value comes back exactly", arguments: [
        Value.null, true, false, 0, -32, 31, 32, -33, 95, 100_000, -1000, .int(.max), .int(.min),
        0.1, 123.45, -0.5, 1e300, .double(5e-324), .double(-0.0), .double(Double.greatestFiniteMagnitude), 3.0,
        "", "a", "red", "2026-03-04T10:05:00Z", "2026-03-04T10:05:00.250Z", "2026-02-30T10:05:00Z", "1969-12-31T23:59:59Z",
        .string(String(repeating: "é", count: 40)), .binary([]), .binary([0, 255, 7]), [], [1, "x", [2.5]],
        ["a": 1, "b": ["c": nil]], ["coordinates": [122.0308, 37.3318], "address": "123 main st"],
    ])
    func exactRoundTrip(value: Value) throws {
        let (decoded, _) = try roundTrip(value)
        #expect(decoded == value)
        if case .double(let d) = value, case .double(let e) = decoded { #expect(d.bitPattern == e.bitPattern) }
    }

    @Test("short decimals, small ints and canonical date-times are compact")
    func compactForms() throws {
        #expect(try roundTrip(7).1 == 1)
        #expect(try roundTrip(100_000).1 == 3)
        #expect(try roundTrip(123.45).1 == 4)
        #expect(try roundTrip(1.5).1 == 2)
        #expect(try roundTrip(true).1 == 1)
        #expect(try roundTrip("2026-03-04T10:05:00Z").1 == 6)
        #expect(try roundTrip(.double(0.1 + 0.2)).1 == 9, "a double that is not a short decimal goes raw")
    }

    @Test("a repeated string costs one byte after its first appearance")
    func interning() throws {
        var context = EncodingContext()
        var w = ByteWriter()
        context.writeValue("in_progress", to: &w)
        let first = w.count
        context.writeValue("in_progress", to: &w)
        #expect(w.count - first == 1)
        var decoding = DecodingContext()
        var r = ByteReader(w.bytes)
        #expect(try decoding.readValue(from: &r) == "in_progress")
        #expect(try decoding.readValue(from: &r) == "in_progress")
    }

    @Test("random values round-trip", arguments: SeededRandom.seeds(count: 10, test: "value-round-trip"))
    func randomRoundTrip(seed: UInt64) throws {
        print("value-round-trip seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        var context = EncodingContext()
        var w = ByteWriter()
        let values = (0..<300).map { _ in RandomMutations.value(&rng) }
        for value in values { context.writeValue(value, to: &w) }
        var decoding = DecodingContext()
        var r = ByteReader(w.bytes)
        for value in values { #expect(try decoding.readValue(from: &r) == value, "seed \(seed)") }
        try r.expectEnd()
    }

    @Test("nesting deeper than the limit is refused")
    func nestingLimit() {
        var bytes: [UInt8] = []
        for _ in 0..<100 { bytes += [ValueTag.array, 1] }
        bytes.append(ValueTag.null)
        var decoding = DecodingContext()
        var r = ByteReader(bytes)
        #expect(throws: CodecError.tooDeep(limit: 64)) { try decoding.readValue(from: &r) }
    }

    @Test("NaN and infinities are refused")
    func nonFiniteDoubles() {
        for bits in [Double.nan.bitPattern, Double.infinity.bitPattern] {
            var w = ByteWriter()
            w.write(ValueTag.double)
            w.writeFixed64(bits)
            var decoding = DecodingContext()
            var r = ByteReader(w.bytes)
            #expect(throws: CodecError.self) { try decoding.readValue(from: &r) }
        }
    }
}
