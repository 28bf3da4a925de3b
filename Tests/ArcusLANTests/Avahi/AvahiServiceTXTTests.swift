import Testing
@testable import ArcusLAN

@Suite struct AvahiServiceTXTTests {
    let record = ServiceTXT(peer: String(repeating: "ab", count: 16), meshHash: "0123456789abcdef", protocolVersion: 3)

    @Test func aPublishedRecordReadsBackTheSame() throws {
        #expect(try ServiceTXT(entries: record.entries) == record)
    }

    @Test func unknownKeysAndBooleanAttributesAreSkipped() throws {
        let entries = record.entries + [Array("future=1".utf8), Array("flag".utf8)]
        #expect(try ServiceTXT(entries: entries) == record)
    }

    @Test(arguments: [
        (["mesh=0123456789abcdef", "v=3"], "no peer id"),
        (["id=ABABABABABABABABABABABABABABABAB", "mesh=0123456789abcdef", "v=3"], "not 32 lowercase hex digits"),
        (["id=abab", "mesh=0123456789abcdef", "v=3"], "not 32 lowercase hex digits"),
        (["id=" + String(repeating: "ab", count: 16), "v=3"], "no mesh hash"),
        (["id=" + String(repeating: "ab", count: 16), "mesh=0123456789abcdeg", "v=3"], "not 16 lowercase hex digits"),
        (["id=" + String(repeating: "ab", count: 16), "mesh=0123456789abcdef"], "no protocol version"),
        (["id=" + String(repeating: "ab", count: 16), "mesh=0123456789abcdef", "v=0"], "not a number from 1 to 65535"),
        (["id=" + String(repeating: "ab", count: 16), "mesh=0123456789abcdef", "v=65536"], "not a number from 1 to 65535"),
        (["id=" + String(repeating: "ab", count: 16), "mesh=0123456789abcdef", "v=-1"], "not a number from 1 to 65535"),
        (["id=" + String(repeating: "ab", count: 16), "id=" + String(repeating: "cd", count: 16), "mesh=0123456789abcdef", "v=3"], "twice"),
    ])
    func aRecordOutOfShapeIsRefusedWithTheReason(entries: [String], reason: String) {
        #expect {
            try ServiceTXT(entries: entries.map { Array($0.utf8) })
        } throws: { error in
            (error as? MalformedTXT)?.reason.contains(reason) == true
        }
    }

    @Test func sizesAndCountsAreBounded() {
        let tooMany = record.entries + (0..<ServiceTXT.maximumEntries).map { Array("k\($0)=x".utf8) }
        #expect(throws: MalformedTXT.self) { try ServiceTXT(entries: tooMany) }

        let oversized = record.entries + [Array("pad=".utf8) + Array(repeating: 0x61, count: 300)]
        #expect(throws: MalformedTXT.self) { try ServiceTXT(entries: oversized) }

        let bulky = record.entries + (0..<8).map { Array("p\($0)=".utf8) + Array(repeating: 0x61, count: 200) }
        #expect(throws: MalformedTXT.self) { try ServiceTXT(entries: bulky) }
    }

    @Test func bytesThatAreNotUTF8AreRefused() {
        let entries = record.entries + [[0x78, 0x3D, 0xFF, 0xFE]]
        #expect(throws: MalformedTXT.self) { try ServiceTXT(entries: entries) }
    }
}
