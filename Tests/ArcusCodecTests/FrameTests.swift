import ArcusCRDT
import Testing
@testable import ArcusCodec

@Suite("Frames")
struct FrameTests {
    static let messages: [SyncMessage] = [
        .hello(Hello(peerID: [1, 2, 3], protocolVersion: 1, capabilities: ["zstd", "attachments"], name: "cabin-7")),
        .subscribe(Subscribe(subscriptionID: 9, query: "SELECT * FROM orders WHERE status != :s", arguments: ["s": "FILLED"])),
        .unsubscribe(subscriptionID: 9),
        .summary(Summary(subscriptionID: 0, version: VersionVector([SiteID(5): Timestamp(milliseconds: 77, logical: 3)]), digest: [1])),
        .deltaBatch(DeltaBatch(documents: [], covers: VersionVector(), position: 12)),
        .ack(Ack(position: 12)),
        .attachmentRequest(AttachmentRequest(hash: [UInt8](repeating: 9, count: 32), offset: 4096, chunkSize: 180)),
        .attachmentChunk(AttachmentChunk(hash: [UInt8](repeating: 9, count: 32), offset: 4096, totalLength: 10_000, bytes: [UInt8](repeating: 1, count: 180))),
        .error(SyncError(code: 2, message: "subscription refused: no read permission on orders")),
        .missing(MissingDocuments(subscriptionID: 3, keys: [DocumentKey("orders", "o1"), DocumentKey("orders", "o2"), DocumentKey("trucks", "t9")])),
        .summary(Summary(subscriptionID: 3, version: VersionVector(), digest: [1, 2, 3, 4, 5, 6, 7, 8], position: 300)),
        .deltaBatch(DeltaBatch(documents: [], subscriptionID: 3, answers: 2)),
        .deltaBatch(DeltaBatch(documents: [], position: 40, subscriptionID: 3, backlog: SyncBacklog(documents: 1_999, bytes: 123_456_789))),
        .deltaBatch(DeltaBatch(documents: [], subscriptionID: 3, answers: 1, backlog: .none)),
        .attachmentRequest(AttachmentRequest(hash: [UInt8](repeating: 9, count: 32), offset: 4096, chunkSize: 180, hops: 2, length: 10_000)),
        .pushNote(PushNote(lazy: [3, 1 << 40], eager: [7], refused: [9], has: [
            DocumentVersion(key: DocumentKey("orders", "o1"), version: VersionVector([SiteID(5): Timestamp(milliseconds: 77, logical: 3)])),
            DocumentVersion(key: DocumentKey("orders", "o2"), version: VersionVector()),
        ])),
        .pushNote(PushNote()),
        .reapedHorizon(ReapedHorizon(subscriptionID: 3, horizon: VersionVector([SiteID(5): Timestamp(milliseconds: 77, logical: 3)]))),
        .reapedHorizon(ReapedHorizon(subscriptionID: 3, horizon: VersionVector([SiteID(5): Timestamp(milliseconds: 77, logical: 3)]), held: [
            HeldEvents(key: DocumentKey("orders", "o1"), events: [Stamp(time: Timestamp(milliseconds: 70, logical: 0), site: SiteID(5))]),
            HeldEvents(key: DocumentKey("orders", "o2"), events: []),
        ], unknown: [DocumentKey("orders", "o3")], answersCheck: true)),
        .reapCheck(ReapCheck(subscriptionID: 3, keys: [DocumentKey("orders", "o1"), DocumentKey("orders", "o2")])),
    ]

    @Test("an attachment request's length is optional and last: one without it (from an older peer) reads as nil, one past Int64 is refused")
    func attachmentRequestLength() throws {
        let plain = AttachmentRequest(hash: [UInt8](repeating: 9, count: 32), chunkSize: 180, hops: 1)
        var encoder = FrameEncoder(), decoder = FrameDecoder()
        let without = encoder.encode(.attachmentRequest(plain))
        let with = encoder.encode(.attachmentRequest(AttachmentRequest(hash: plain.hash, chunkSize: 180, hops: 1, length: 0)))
        #expect(with.count == without.count + 1)
        guard case .attachmentRequest(let decoded)? = try decoder.decode(without) else {
            Issue.record("not a request")
            return
        }
        #expect(decoded.length == nil)
        let huge = encoder.encode(.attachmentRequest(AttachmentRequest(hash: plain.hash, chunkSize: 180, hops: 1, length: UInt64(Int64.max) + 1)))
        #expect(throws: CodecError.self) { try decoder.decode(huge) }
    }

    @Test("every message type round-trips through a frame", arguments: messages)
    func roundTrip(message: SyncMessage) throws {
        var encoder = FrameEncoder()
        var decoder = FrameDecoder()
        let frame = encoder.encode(message)
        #expect(frame[0] >> 5 == FrameHeader.currentVersion)
        #expect(try decoder.decode(frame) == message)
    }

    @Test("a flipped bit anywhere in a frame is caught")
    func checksum() throws {
        var encoder = FrameEncoder()
        let frame = encoder.encode(Self.messages[1])
        for i in 1..<frame.count {
            for bit in 0..<8 {
                var corrupted = frame
                corrupted[i] ^= 1 << bit
                var decoder = FrameDecoder()
                #expect(throws: CodecError.self) { try decoder.decode(corrupted) }
            }
        }
    }

    @Test("every truncation of a frame is an error, never a crash")
    func truncation() {
        var encoder = FrameEncoder()
        let frame = encoder.encode(Self.messages[7])
        for length in 0..<frame.count {
            var decoder = FrameDecoder()
            #expect(throws: CodecError.self) { try decoder.decode(Array(frame[..<length])) }
        }
    }

    @Test("another protocol version is refused by name")
    func version() {
        var frame = FrameEncoder.frame(rawTypeByte: MessageType.ack.rawValue, payload: [1])
        frame[0] = 2 << 5 | MessageType.ack.rawValue
        var decoder = FrameDecoder()
        #expect(throws: CodecError.unsupportedVersion(2)) { try decoder.decode(frame) }
    }

    @Test("a well-formed frame of an unknown type is skipped")
    func unknownType() throws {
        var decoder = FrameDecoder()
        #expect(try decoder.decode(FrameEncoder.frame(rawTypeByte: 0x0F, payload: [1, 2, 3])) == nil)
    }

    @Test("large payloads are compressed and come back intact")
    func compression() throws {
        let big = SyncMessage.attachmentChunk(AttachmentChunk(hash: [1], offset: 0, totalLength: 4000, bytes: [UInt8](repeating: 42, count: 4000)))
        var encoder = FrameEncoder()
        let frame = encoder.encode(big)
        #expect(frame[0] & FrameHeader.compressedFlag != 0)
        #expect(frame.count < 200)
        var decoder = FrameDecoder()
        #expect(try decoder.decode(frame) == big)
    }

    @Test("a compressed payload that claims more than the frame limit is refused before expanding")
    func inflateBomb() throws {
        var payload = ByteWriter()
        payload.writeVarint(UInt64(CodecLimits.standard.maximumFrameLength) + 1)
        payload.write(contentsOf: [0x03, 0x00])
        let frame = FrameEncoder.frame(rawTypeByte: MessageType.ack.rawValue | FrameHeader.compressedFlag, payload: payload.bytes)
        var decoder = FrameDecoder()
        #expect(throws: CodecError.self) { try decoder.decode(frame) }
        // And one that expands to more than it declared.
        var liar = ByteWriter()
        liar.writeVarint(10)
        liar.write(contentsOf: Compression.compress([UInt8](repeating: 0, count: 1000))!)
        var second = FrameDecoder()
        #expect(throws: CodecError.self) {
            try second.decode(FrameEncoder.frame(rawTypeByte: MessageType.ack.rawValue | FrameHeader.compressedFlag, payload: liar.bytes))
        }
    }

    @Test("a stream fed one byte at a time yields the same frames")
    func splitter() throws {
        var encoder = FrameEncoder()
        let stream = Self.messages.flatMap { encoder.encode($0) }
        var splitter = FrameSplitter()
        var decoder = FrameDecoder()
        var decoded: [SyncMessage] = []
        for byte in stream {
            splitter.append([byte])
            while let frame = try splitter.next() {
                if let message = try decoder.decode(frame) { decoded.append(message) }
            }
        }
        #expect(decoded == Self.messages)
    }

    @Test("a stream declaring an oversized frame is refused before buffering it")
    func oversizedStreamFrame() {
        var splitter = FrameSplitter()
        var w = ByteWriter()
        w.write(FrameHeader.currentVersion << 5 | MessageType.ack.rawValue)
        w.writeVarint(UInt64(CodecLimits.standard.maximumFrameLength) + 1)
        splitter.append(w.bytes)
        #expect(throws: CodecError.self) { try splitter.next() }
    }
}

extension SyncMessage: CustomTestStringConvertible {
    public var testDescription: String { "\(type)" }
}
