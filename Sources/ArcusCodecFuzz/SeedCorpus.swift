import ArcusCRDT
import ArcusCodec

/// Valid frames of every message type, for the fuzzer to start from.
enum SeedCorpus {
    static func frames() -> [[UInt8]] {
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
            .hello(Hello(peerID: Array(repeating: 1, count: 16), protocolVersion: 1, capabilities: ["zstd"], name: "pi-1")),
            .subscribe(Subscribe(subscriptionID: 1, query: "SELECT * FROM orders WHERE status != :s", arguments: ["s": "FILLED"])),
            .unsubscribe(subscriptionID: 1),
            .summary(Summary(subscriptionID: 1, version: version, digest: [9, 9])),
            .deltaBatch(DeltaBatch(documents: [
                DocumentDelta(key: DocumentKey("orders", "d00001"), state: doc),
                DocumentDelta(key: DocumentKey("orders", "d00002"), state: other),
                DocumentDelta(key: DocumentKey(collection: "sensors", id: ["site": "x", "n": 1]), state: removed),
            ], covers: version, position: 42)),
            .deltaBatch(DeltaBatch(documents: [DocumentDelta(key: DocumentKey("orders", "d00003"), state: doc)], position: 43,
                                   subscriptionID: 1, backlog: SyncBacklog(documents: 500, bytes: 64_000))),
            .ack(Ack(position: 42)),
            .attachmentRequest(AttachmentRequest(hash: Array(repeating: 7, count: 32), offset: 0, chunkSize: 180)),
            .attachmentRequest(AttachmentRequest(hash: Array(repeating: 7, count: 32), offset: 0, chunkSize: 180, hops: 2, length: 99)),
            .attachmentChunk(AttachmentChunk(hash: Array(repeating: 7, count: 32), offset: 0, totalLength: 99, bytes: Array(0..<99))),
            .error(SyncError(code: 3, message: "not allowed")),
        ]
        var encoder = FrameEncoder()
        var frames = messages.map { encoder.encode($0) }
        // A large batch, which goes out compressed.
        let many = (0..<40).map { i in DocumentDelta(key: DocumentKey("orders", "d\(10000 + i)"), state: doc) }
        var fresh = FrameEncoder()
        frames.append(fresh.encode(.deltaBatch(DeltaBatch(documents: many))))
        return frames
    }
}
