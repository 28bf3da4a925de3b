import ArcusCRDT
import ArcusTestSupport
import Testing
@testable import ArcusCodec

/// A bounded version of Tools/fuzz.sh that every test run does: valid frames mutated at random
/// (bits flipped, bytes inserted and removed, lengths changed), re-framed with a correct
/// checksum so the payload decoders see them. Decoding must end in a message or a CodecError.
@Suite("Hostile input")
struct HostileInputTests {
    static func seedFrames() -> [[UInt8]] {
        var rng = SeededRandom(seed: 7)
        let sites = [SiteID(1), SiteID(2)]
        var encoder = FrameEncoder()
        var frames = FrameTests.messages.map { encoder.encode($0) }
        let documents = (0..<8).map { i in
            DocumentDelta(key: DocumentKey("orders", "d\(1000 + i)"), state: RandomMutations.document(&rng, mutations: 12, sites: sites))
        }
        frames.append(encoder.encode(.deltaBatch(DeltaBatch(documents: documents, covers: VersionVector(), position: 3))))
        return frames
    }

    @Test("mutated frames decode or fail cleanly", arguments: SeededRandom.seeds(count: 4, test: "hostile-frames"))
    func mutatedFrames(seed: UInt64) {
        print("hostile-frames seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let seeds = Self.seedFrames()
        var decodedOK = 0
        for _ in 0..<5000 {
            var frame = seeds.randomElement(using: &rng)!
            // Skip the header: mutate the payload, then frame it again with a good checksum.
            let typeByte = frame[0] & 0x1F
            var payload = Array(frame[2..<max(2, frame.count - 4)])
            RandomMutations.damage(&payload, &rng)
            frame = FrameEncoder.frame(rawTypeByte: typeByte, payload: payload)
            var decoder = FrameDecoder()
            do {
                if try decoder.decode(frame) != nil { decodedOK += 1 }
            } catch {
                // A typed CodecError is the expected outcome for most mutations.
            }
        }
        print("hostile-frames: \(decodedOK) of 5000 mutated frames still decoded")
    }

    @Test("a hostile count cannot make the decoder allocate more than the input backs")
    func hugeCounts() {
        for type in MessageType.allCases {
            var payload = ByteWriter()
            for _ in 0..<6 { payload.writeVarint(UInt64.max >> 2) }
            var decoder = FrameDecoder()
            #expect(throws: CodecError.self) { try decoder.decode(FrameEncoder.frame(rawTypeByte: type.rawValue, payload: payload.bytes)) }
        }
    }

    @Test("a push note's three subscription lists hold at most 256 ids together: one more is refused before it is read")
    func pushNoteLists() throws {
        func note(lazy: Int, eager: Int, refused: Int) -> [UInt8] {
            var payload = ByteWriter()
            for count in [lazy, eager, refused] {
                payload.writeVarint(count)
                for id in 0..<count { payload.writeVarint(UInt64(id + 1)) }
            }
            payload.writeVarint(0)   // no documents noted
            return FrameEncoder.frame(rawTypeByte: MessageType.pushNote.rawValue, payload: payload.bytes)
        }
        var decoder = FrameDecoder()
        let full = try decoder.decode(note(lazy: 200, eager: 50, refused: 6))
        guard case .pushNote(let decoded)? = full else { Issue.record("256 ids did not decode: \(String(describing: full))"); return }
        #expect(decoded.lazy.count + decoded.eager.count + decoded.refused.count == PushNote.maximumSubscriptions)
        for (lazy, eager, refused) in [(257, 0, 0), (200, 57, 0), (200, 50, 7), (0, 0, 257)] {
            var fresh = FrameDecoder()
            #expect(throws: CodecError.self, "\(lazy)+\(eager)+\(refused) ids") { try fresh.decode(note(lazy: lazy, eager: eager, refused: refused)) }
        }
    }

    @Test("interning tables stop growing at their limit, the same way on both sides")
    func internLimits() throws {
        var limits = CodecLimits()
        limits.maximumInternedItems = 4
        var encoder = FrameEncoder(limits: limits), decoder = FrameDecoder(limits: limits)
        var doc = DocumentState()
        let fields = Dictionary(uniqueKeysWithValues: (0..<20).map { ("field\($0)", Value.string("value number \($0)")) })
        let delta = doc.upsert(fields, at: Stamp(time: Timestamp(milliseconds: 9), site: SiteID(3)))!
        for _ in 0..<3 {
            let frame = encoder.encode(.deltaBatch(DeltaBatch(documents: [DocumentDelta(key: DocumentKey("c", "x"), state: delta)])))
            guard case .deltaBatch(let batch)? = try decoder.decode(frame) else {
                Issue.record("did not decode")
                return
            }
            #expect(batch.documents.first?.state == delta)
        }
    }
}
