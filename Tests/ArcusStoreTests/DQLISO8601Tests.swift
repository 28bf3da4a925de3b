import ArcusCRDT
import Testing

@testable import ArcusStore

@Suite("ISO 8601 date strings compare as instants")
struct DQLISO8601Tests {
    @Test("recognised forms and the instants they denote", arguments: [
        ("1970-01-01", 0, 0),
        ("1970-01-01T00:00:00Z", 0, 0),
        ("2026-03-04T10:00:00Z", 1_772_618_400, 0),
        ("2026-03-04t10:00:00z", 1_772_618_400, 0),
        ("2026-03-04 10:00:00Z", 1_772_618_400, 0),
        ("2026-03-04T10:00:00", 1_772_618_400, 0),
        ("2026-03-04T10:00Z", 1_772_618_400, 0),
        ("2026-03-04T11:00:00+01:00", 1_772_618_400, 0),
        ("2026-03-04T11:00:00+0100", 1_772_618_400, 0),
        ("2026-03-04T11:00:00+01", 1_772_618_400, 0),
        ("2026-03-04T04:30:00-05:30", 1_772_618_400, 0),
        ("2026-03-04T10:00:00.250Z", 1_772_618_400, 250_000_000),
        ("2026-03-04T10:00:00,5Z", 1_772_618_400, 500_000_000),
        ("2026-03-04T10:00:00.123456789123Z", 1_772_618_400, 123_456_789),
        ("1969-12-31T23:59:59Z", -1, 0),
        ("0000-01-01", -62_167_219_200, 0),
        ("9999-12-31T23:59:59Z", 253_402_300_799, 0),
        ("2024-02-29", 1_709_164_800, 0),
        ("2016-12-31T23:59:60Z", 1_483_228_800, 0),
    ])
    func recognised(_ text: String, _ seconds: Int64, _ nanoseconds: Int32) {
        #expect(ISO8601Instant(text) == ISO8601Instant(seconds: seconds, nanoseconds: nanoseconds))
    }

    @Test("other strings are not dates", arguments: [
        "", "2026", "2026-03", "2026-3-04", "2026-03-4", "26-03-04", "2026-13-01", "2026-00-10", "2026-02-30",
        "2025-02-29", "2100-02-29", "2026-03-04T", "2026-03-04T10", "2026-03-04T24:00:00Z", "2026-03-04T10:60:00Z",
        "2026-03-04T10:00:61Z", "2026-03-04T10:00:00.Z", "2026-03-04T10:00:00+1", "2026-03-04T10:00:00+24:00",
        "2026-03-04T10:00:00+01:60", "2026-03-04T10:00:00ZZ", "2026-03-04T10:00:00 Z", "2026-03-04X10:00:00Z",
        "+2026-03-04", "2026-03-04 ", "２０２６-03-04", "abcd-ef-gh",
    ])
    func rejected(_ text: String) {
        #expect(ISO8601Instant(text) == nil)
    }

    @Test("equality across time zones and precision")
    func equality() throws {
        #expect(try DQL.eval("'2026-03-04T11:00:00+01:00' = '2026-03-04T10:00:00Z'") == true)
        #expect(try DQL.eval("'2026-03-04T10:00:00.000Z' = '2026-03-04T10:00:00Z'") == true)
        #expect(try DQL.eval("'2026-03-04' = '2026-03-04T00:00:00Z'") == true)
        #expect(try DQL.eval("'2026-03-04T10:00:00.001Z' = '2026-03-04T10:00:00Z'") == false)
        #expect(try DQL.eval("'2026-03-04T10:00:00Z' != '2026-03-04T05:00:00-05:00'") == false)
    }

    @Test("ordering by instant, where text order would disagree")
    func ordering() throws {
        // As text, "…11:00…+01:00" sorts after "…10:30…Z"; as instants it is earlier.
        #expect(try DQL.eval("'2026-03-04T11:00:00+01:00' < '2026-03-04T10:30:00Z'") == true)
        #expect(try DQL.eval("'2026-03-04T10:00:00.250Z' > '2026-03-04T10:00:00.1Z'") == true)
        #expect(try DQL.eval("'2026-03-04T09:59:59.999Z' < '2026-03-04T10:00:00Z'") == true)
        #expect(try DQL.eval("'2026-03-05' > '2026-03-04T23:59:59Z'") == true)
        #expect(try DQL.eval("'2026-03-04T23:30:00-01:00' > '2026-03-05T00:00:00Z'") == true)
        #expect(try DQL.eval("'2026-03-04T11:00:00+01:00' <= '2026-03-04T10:00:00Z'") == true)
        #expect(try DQL.eval("'2026-03-04T11:00:00+01:00' >= '2026-03-04T10:00:00Z'") == true)
    }

    @Test("a date against a non-date string compares as text")
    func mixed() throws {
        #expect(try DQL.eval("'2026-03-04T10:00:00Z' < 'later'") == true)
        #expect(try DQL.eval("'2026-03-04T10:00:00Z' = '2026-03-04T10:00:00Zulu'") == false)
    }

    @Test("WHERE with a date range and arguments")
    func whereRange() throws {
        let events: [Value] = [
            ["_id": "a", "at": "2026-03-04T08:59:59+00:00"],
            ["_id": "b", "at": "2026-03-04T10:00:00+01:00"],
            ["_id": "c", "at": "2026-03-04T09:30:00.5Z"],
            ["_id": "d", "at": "2026-03-04T12:00:00+02:00"],
            ["_id": "e", "at": "2026-03-04T10:00:00.001Z"],
            ["_id": "f", "at": "not a date"],
        ]
        let condition = try DQL.expression("at BETWEEN :from AND :to")
        let arguments: [String: Value] = ["from": "2026-03-04T09:00:00Z", "to": "2026-03-04T10:00:00Z"]
        let matched = try events.filter { doc throws(DQLError) in
            try DQLEvaluator.matches(where: condition, document: doc, arguments: arguments)
        }
        #expect(matched.compactMap { $0[path: "_id"]?.stringValue } == ["b", "c", "d"])
    }
}
