import ArcusCRDT
import ArcusCodec

/// The sync codec (`FrameDecoder.decode`, `FrameSplitter.next`): every frame a peer sends.
/// Whatever the bytes, decoding ends in a message or a `CodecError`; a message that decodes must
/// encode and decode again to the same message.
enum CodecTarget {
    static let target = FuzzTarget(
        name: "codec", entryPoint: "ArcusCodec: FrameDecoder.decode(_:), FrameSplitter.next()", run: run, seeds: seeds
    )

    static func run(_ bytes: [UInt8]) {
        // 1. As a whole frame (header, length, checksum).
        var decoder = FrameDecoder()
        if let message = try? decoder.decode(bytes) { checkRoundTrip(message) }

        // 2. As a payload: the first byte picks the frame byte (type, compression), the rest is
        //    the payload, framed with a correct checksum so mutations reach the payload decoders.
        if let first = bytes.first {
            let frame = FrameEncoder.frame(rawTypeByte: first & 0x1F, payload: Array(bytes.dropFirst()))
            var payloadDecoder = FrameDecoder()
            if let message = try? payloadDecoder.decode(frame) { checkRoundTrip(message) }
        }

        // 3. As a byte stream cut into frames, decoded in one session.
        var splitter = FrameSplitter()
        splitter.append(bytes)
        var streamDecoder = FrameDecoder()
        while let frame = try? splitter.next() {
            guard (try? streamDecoder.decode(frame)) != nil else { break }
        }
    }

    static func checkRoundTrip(_ message: SyncMessage) {
        var encoder = FrameEncoder()
        var decoder = FrameDecoder()
        let frame = encoder.encode(message)
        guard let again = try? decoder.decode(frame) else {
            FuzzCheck.fail("a decoded message failed to decode after re-encoding: \(message)")
        }
        FuzzCheck.expect(again == message, "a decoded message changed in a round trip:\n\(message)\n\(again)")
    }

    /// Valid frames of every message type, one large enough to go compressed, compressed payloads
    /// (which a fuzzer could not find by mutating plain ones), and payloads as the second mode reads them.
    static func seeds() -> [[UInt8]] {
        let a = SiteID(0x0102_0304_0506_0708), b = SiteID(0x1112_1314_1516_1718)
        var doc = DocumentState()
        var time: UInt64 = 1_800_000_000_000
        func stamp(_ site: SiteID) -> Stamp {
            time += 3
            return Stamp(time: Timestamp(milliseconds: time, logical: UInt16(time % 20)), site: site)
        }
        doc.upsert(["status": "open", "qty": 3, "temp": 21.5, "seen": "2026-03-04T10:05:00Z",
                    "owner": ["name": "ada", "zone": ["a", "b"]], "blob": .binary([1, 2, 3])], at: stamp(a))
        var other = doc
        other.set(["owner", "name"], to: "bob", at: stamp(b))
        doc.increment(["scans"], by: .int(2), at: stamp(a))
        doc.unset(["temp"], at: stamp(a))
        doc.setAttachment(["photo"], to: AttachmentToken(hash: Array(repeating: 7, count: 32), length: 99, metadata: ["name": "p.jpg"]), at: stamp(a))
        doc.join(other)
        var removed = doc
        removed.remove(at: stamp(b))
        let version = VersionVector([a: Timestamp(milliseconds: time - 6), b: Timestamp(milliseconds: time)])
        let messages: [SyncMessage] = [
            .hello(Hello(peerID: Array(repeating: 1, count: 8), protocolVersion: 1, capabilities: ["backlog", "credentials"], name: "pi-1")),
            .subscribe(Subscribe(subscriptionID: 1, query: "SELECT * FROM orders WHERE status != :s", arguments: ["s": "FILLED"])),
            .unsubscribe(subscriptionID: 1),
            .summary(Summary(subscriptionID: 1, version: version, digest: [9, 9], position: 12)),
            .deltaBatch(DeltaBatch(documents: [
                DocumentDelta(key: DocumentKey("orders", "d00001"), state: doc),
                DocumentDelta(key: DocumentKey("orders", "d00002"), state: other),
                DocumentDelta(key: DocumentKey(collection: "sensors", id: ["site": "x", "n": 1]), state: removed),
            ], covers: version, position: 42)),
            .deltaBatch(DeltaBatch(documents: [DocumentDelta(key: DocumentKey("orders", "d00003"), state: doc)], position: 43,
                                   subscriptionID: 1, answers: 1, backlog: SyncBacklog(documents: 500, bytes: 64_000))),
            .ack(Ack(position: 42, subscriptionID: 1)),
            .attachmentRequest(AttachmentRequest(hash: Array(repeating: 7, count: 32), offset: 0, chunkSize: 180, hops: 1)),
            .attachmentChunk(AttachmentChunk(hash: Array(repeating: 7, count: 32), offset: 0, totalLength: 99, bytes: Array(0..<99))),
            .error(SyncError(code: 3, message: "not allowed")),
            .missing(MissingDocuments(subscriptionID: 1, keys: (0..<20).map { DocumentKey("orders", "d\(10_000 + $0)") })),
            .credentials(Credentials(items: [Credentials.Item(kind: 1, bytes: Array(repeating: 5, count: 40)), Credentials.Item(kind: 2, bytes: [1, 2, 3])])),
        ]
        var encoder = FrameEncoder()
        var frames = messages.map { encoder.encode($0) }
        // A large batch, which goes out compressed.
        let many = (0..<40).map { i in DocumentDelta(key: DocumentKey("orders", "d\(10000 + i)"), state: doc) }
        var fresh = FrameEncoder()
        frames.append(fresh.encode(.deltaBatch(DeltaBatch(documents: many))))
        // Compressed payloads of other types: a missing list, a subscription with arguments.
        var plain = FrameEncoder()
        for message: SyncMessage in [
            .missing(MissingDocuments(subscriptionID: 2, keys: (0..<300).map { DocumentKey("orders", "order-\(100_000 + $0)") })),
            .subscribe(Subscribe(subscriptionID: 4, query: "SELECT * FROM sensors WHERE zone IN :zones",
                                 arguments: ["zones": .array((0..<100).map { .string("zone-\($0 % 7)") })])),
        ] {
            let frame = plain.encode(message)
            // The payload, however the encoder framed it, compressed as a peer could.
            let payload = Array(frame[(frame[1] < 0x80 ? 2 : frame[2] < 0x80 ? 3 : 4)..<(frame.count - 4)])
            frames.append(frame[0] & 0x10 != 0 ? frame : FrameEncoder.compressedFrame(type: message.type, payload: payload))
        }
        // The second mode reads a type byte and a payload: a few as such.
        let payloads = frames.prefix(6).map { frame in [frame[0] & 0x1F] + frame[(frame[1] < 0x80 ? 2 : 3)..<(frame.count - 4)] }
        // A stream of several frames of one session.
        var session = FrameEncoder()
        let stream = messages.prefix(5).flatMap { session.encode($0) }
        return frames + payloads + [stream]
    }
}
