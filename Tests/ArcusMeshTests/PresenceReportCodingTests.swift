import ArcusCodec
import ArcusMesh
import ArcusTestSupport
import Testing

@Suite("Presence report encoding")
struct PresenceReportCodingTests {
    typealias F = PresenceFixtures

    @Test("a report with four links fits one BLE packet with room to spare")
    func fourLinksFitBLE() throws {
        let bytes = F.fourLinks.encoded()
        print("presence report with 4 links (3 neighbours): \(bytes.count) bytes")
        #expect(bytes.count < 244 / 2)
        #expect(try PresenceReport(decoding: bytes) == F.fourLinks)
    }

    @Test("a neighbour reached by two transports is written once")
    func neighbourTableSharesIDs() {
        var one = F.fourLinks
        one.links = [one.links[0]]
        var two = F.fourLinks
        two.links = [two.links[0], two.links[1]]
        // The second link costs its flags, index and figures, not another 16-byte id.
        #expect(two.encoded().count - one.encoded().count < PeerID.size)
    }

    @Test("an empty report round-trips")
    func emptyReport() throws {
        let report = PresenceReport(origin: F.peer(9), name: "", sequence: 0)
        #expect(try PresenceReport(decoding: report.encoded()) == report)
    }

    @Test("random reports round-trip", arguments: SeededRandom.seeds(count: 4, test: "presence-round-trip"))
    func randomRoundTrip(seed: UInt64) throws {
        print("presence-round-trip seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        for _ in 0..<500 {
            let report = F.randomReport(&rng)
            try report.validate()
            #expect(try PresenceReport(decoding: report.encoded()) == report)
        }
    }

    @Test("every truncation of a report is an error")
    func truncated() {
        let bytes = F.fourLinks.encoded()
        for length in 0..<bytes.count {
            #expect(throws: CodecError.self) { try PresenceReport(decoding: Array(bytes.prefix(length))) }
        }
    }

    @Test("trailing bytes, an unknown version or unknown flags are refused")
    func malformed() {
        let bytes = F.fourLinks.encoded()
        #expect(throws: CodecError.trailingBytes(count: 1)) { try PresenceReport(decoding: bytes + [0]) }
        var version = bytes
        version[0] = 2
        #expect(throws: CodecError.self) { try PresenceReport(decoding: version) }
        // The first link's flags follow the table: version, origin, sequence, name, metadata
        // count, table count, three ids, link count.
        let flagsOffset = 1 + 16 + 6 + 7 + 1 + 1 + 3 * 16 + 1
        #expect(bytes[flagsOffset] == 0b0000_1000 | 0b0001_0000 | 0b0010_0000)
        var flags = bytes
        flags[flagsOffset] |= 0b0100_0000
        #expect(throws: CodecError.unknownTag(what: "presence link flags", tag: flags[flagsOffset], offset: flagsOffset)) {
            try PresenceReport(decoding: flags)
        }
        var index = bytes
        index[flagsOffset + 1] = 3
        #expect(throws: CodecError.badReference(what: "neighbour", index: 3)) { try PresenceReport(decoding: index) }
    }

    @Test("huge counts are refused before anything is allocated")
    func hugeCounts() {
        for field in 0..<3 {
            var writer = ByteWriter()
            writer.write(1)
            writer.write(contentsOf: F.peer(1).bytes)
            writer.writeVarint(7)  // sequence
            writer.writeString("x")
            for _ in 0..<field { writer.writeVarint(0) }  // the counts before the huge one
            writer.writeVarint(UInt64.max >> 1)
            #expect(throws: CodecError.self) { try PresenceReport(decoding: writer.bytes) }
        }
        var writer = ByteWriter()
        writer.write(1)
        writer.write(contentsOf: F.peer(1).bytes)
        writer.writeVarint(7)
        writer.writeVarint(1 << 40)  // name length
        #expect(throws: CodecError.self) { try PresenceReport(decoding: writer.bytes) }
    }

    @Test("a report that lists a link twice or to its origin is refused")
    func duplicates() {
        var twice = F.fourLinks
        twice.links.append(twice.links[0])
        #expect(throws: CodecError.self) { try twice.validate() }
        #expect(throws: CodecError.self) { try PresenceReport(decoding: twice.encoded()) }
        var toSelf = F.fourLinks
        toSelf.links.append(.init(peer: toSelf.origin, kind: .lan))
        #expect(throws: CodecError.self) { try toSelf.validate() }
        #expect(throws: CodecError.self) { try PresenceReport(decoding: toSelf.encoded()) }
    }

    @Test("a name or metadata over the limits is refused by both ends")
    func limits() {
        let long = PresenceReport(origin: F.peer(1), name: String(repeating: "n", count: PresenceReport.Limits.nameBytes + 1), sequence: 1)
        #expect(throws: CodecError.self) { try long.validate() }
        #expect(throws: CodecError.self) { try PresenceReport(decoding: long.encoded()) }
        let crowded = PresenceReport(
            origin: F.peer(1), name: "p", sequence: 1,
            metadata: Dictionary(uniqueKeysWithValues: (0...PresenceReport.Limits.metadataEntries).map { ("k\($0)", "v") })
        )
        #expect(throws: CodecError.self) { try crowded.validate() }
        #expect(throws: CodecError.self) { try PresenceReport(decoding: crowded.encoded()) }
    }

    @Test("mutated reports decode or fail cleanly", arguments: SeededRandom.seeds(count: 4, test: "presence-hostile"))
    func mutated(seed: UInt64) {
        print("presence-hostile seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        var decoded = 0
        for _ in 0..<5000 {
            var bytes = Bool.random(using: &rng) ? F.fourLinks.encoded() : F.randomReport(&rng).encoded()
            RandomMutations.damage(&bytes, &rng)
            if let report = try? PresenceReport(decoding: bytes) {
                decoded += 1
                // Whatever decodes is a report its sender could have made.
                #expect(throws: Never.self) { try report.validate() }
            }
        }
        print("presence-hostile: \(decoded) of 5000 mutated reports still decoded")
    }
}
