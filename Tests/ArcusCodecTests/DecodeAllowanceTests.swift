import ArcusCRDT
import ArcusTestSupport
import Testing
@testable import ArcusCodec

/// The per-frame decode allowance (`DecodeAllowance`, `CodecLimits.maximumDecodedBytes`): what
/// it charges, that it is per frame, and that what senders make fits it with room to spare.
@Suite("Decode allowance")
struct DecodeAllowanceTests {
    @Test("each step key is charged its whole id: 10,000 steps from a 1 KiB id fit, a smaller allowance refuses them")
    func stepKeysAreCharged() throws {
        let payload = DecodedSizeTests.steppedMissing(DecodedSizeTests.id(1024), steps: 9_999)
        guard case .missing(let missing)? = try DecodedSizeTests.decode(.missing, payload) else {
            Issue.record("did not decode")
            return
        }
        #expect(missing.keys.count == 10_000)
        var limits = CodecLimits()
        limits.maximumDecodedBytes = 8 << 20
        var decoder = FrameDecoder(limits: limits)
        #expect(throws: CodecError.self) { try decoder.decode(FrameEncoder.frame(rawTypeByte: MessageType.missing.rawValue, payload: payload)) }
    }

    @Test("a compressed payload is charged its expanded size before it is expanded")
    func expandedPayloadIsCharged() throws {
        let message = SyncMessage.attachmentChunk(AttachmentChunk(hash: [1], offset: 0, totalLength: 60_000, bytes: (0..<60_000).map { UInt8(truncatingIfNeeded: $0 * 7 / 5) }))
        var encoder = FrameEncoder()
        let frame = encoder.encode(message)
        #expect(frame[0] & FrameHeader.compressedFlag != 0)
        var limits = CodecLimits()
        limits.maximumDecodedBytes = 50_000
        var decoder = FrameDecoder(limits: limits)
        #expect(throws: CodecError.self) { try decoder.decode(frame) }
    }

    @Test("the allowance is per frame: frames that each take most of it decode one after another")
    func allowancePerFrame() throws {
        // 600,000 nulls: about 60% of the allowance each (a value's slot is 16 or 24 bytes).
        let nulls = Value.array(Array(repeating: .null, count: 600_000))
        var encoder = FrameEncoder(), decoder = FrameDecoder()
        #expect(600_000 * DecodedCost.value > CodecLimits.standard.maximumDecodedBytes / 2)
        #expect(600_000 * DecodedCost.value < CodecLimits.standard.maximumDecodedBytes)
        for id in 1...3 {
            let message = SyncMessage.subscribe(Subscribe(subscriptionID: UInt64(id), query: "SELECT * FROM orders", arguments: nulls))
            #expect(try decoder.decode(encoder.encode(message)) == message)
        }
    }

    @Test("the largest batch a sender makes by default (1,023 documents, on a 64 KiB link), of documents of 20 changes, takes under a third of the allowance",
          arguments: SeededRandom.seeds(count: 1, test: "decode-allowance-large-batch"))
    func largeLegitimateBatch(seed: UInt64) throws {
        print("decode-allowance-large-batch seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let sites = [SiteID(1), SiteID(2), SiteID(3)]
        let documents = (0..<1023).map { i in
            DocumentDelta(key: DocumentKey("orders", "d\(100_000 + i)"), state: RandomMutations.document(&rng, mutations: 20, sites: sites))
        }
        let message = SyncMessage.deltaBatch(DeltaBatch(documents: documents, position: 9))
        var encoder = FrameEncoder(), decoder = FrameDecoder()
        let frame = encoder.encode(message)
        // Decoded with a third of the allowance, to show the margin.
        var limits = CodecLimits()
        limits.maximumDecodedBytes = CodecLimits.standard.maximumDecodedBytes / 3
        var tight = FrameDecoder(limits: limits)
        #expect(try tight.decode(frame) == message)
        #expect(try decoder.decode(frame) == message)
        #expect(decoder.context.allowance.limit == .max, "the allowance applies while a frame decodes, not after")
    }

    @Test("a store's own documents decode without an allowance (it holds what it wrote)")
    func storedDocumentsUnbounded() throws {
        var document = DocumentState()
        let fields = Dictionary(uniqueKeysWithValues: (0..<200_000).map { ("f\($0)", Value.int(Int64($0))) })
        _ = document.upsert(fields, at: Stamp(time: Timestamp(milliseconds: 5), site: SiteID(9)))
        var w = ByteWriter()
        var encoding = EncodingContext()
        encoding.writeDocument(document, to: &w)
        var context = DecodingContext()
        var reader = ByteReader(w.bytes)
        #expect(try context.readDocument(from: &reader) == document)
    }
}
