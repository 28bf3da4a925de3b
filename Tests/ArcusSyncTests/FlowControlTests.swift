import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Testing
@testable import ArcusSync

/// On a slow link, what matters now goes first: live changes before the bulk backfill, and the
/// backfill before attachment chunks; and a link that does not take frames makes nothing pile up.
@Suite("Flow control")
struct FlowControlTests {
    @Test("live changes made during a large backfill arrive before the backfill finishes")
    func liveBeforeBackfill() async throws {
        let a = try Peer("a", batchSize: 20), b = try Peer("b", batchSize: 20)
        try a.store.insertOrders(0..<2_000)
        _ = try b.subscribe("SELECT * FROM orders")
        let (ca, cb) = TestChannel.pair()
        ca.hold()
        a.engine.connect(ca)
        let session = b.engine.connect(cb)
        ca.release(5)
        #expect(await eventually { ca.sent.withLock { $0.count } == 5 })
        try a.store.collection("orders").upsert(["_id": "zz-live", "status": "OPEN"])
        var released = 5
        let arrived = try await eventually {
            if try !ids(b.store, "orders").contains("zz-live") {
                if ca.waitingSends.now > 0 && released < 12 { ca.release(); released += 1 }
                return false
            }
            return true
        }
        #expect(arrived)
        #expect(try ids(b.store, "orders").count < 1_000, "the live change waited for the backfill")
        ca.releaseAll()
        #expect(await session.waitUntilCaughtUp())
        #expect(try ids(b.store, "orders").count == 2_001)
        a.engine.stop(); b.engine.stop()
    }

    @Test("attachment chunks go after the delta batches")
    func chunksAfterBatches() async throws {
        let a = try Peer("a", batchSize: 20), b = try Peer("b", batchSize: 20)
        try a.store.insertOrders(0..<500)
        let bytes = AttachmentFetchTests.blob(8_000)
        let token = try AttachmentFetchTests.attach(bytes, on: a)
        _ = try b.subscribe("SELECT * FROM orders")
        let (ca, cb) = TestChannel.pair(preferredFrameSize: 1024)
        ca.hold()
        a.engine.connect(ca)
        b.engine.connect(cb)
        let fetch = Task { try await b.engine.fetchAttachment(token) }
        // Let the request reach a before a sends anything but its hello.
        ca.release(1)
        #expect(await eventually { cb.sentTypes.contains(.attachmentRequest) })
        try await Task.sleep(for: .milliseconds(20))
        ca.releaseAll()
        #expect(try await fetch.value == bytes)
        let types = ca.sentTypes
        let lastBatch = types.lastIndex(of: .deltaBatch) ?? -1, firstChunk = types.firstIndex(of: .attachmentChunk) ?? -1
        #expect(lastBatch > 0 && firstChunk > lastBatch, "\(types)")
        a.engine.stop(); b.engine.stop()
    }

    @Test("a link that takes no frames makes nothing pile up, however much the peer asks")
    func bounded() async throws {
        let a = try Peer("a", batchSize: 20)
        try a.store.insertOrders(0..<1_000)
        let token = try AttachmentFetchTests.attach(AttachmentFetchTests.blob(50_000), on: a)
        // 30 requests for that blob, 2,970 for blobs a has not got.
        let (ca, peer) = TestChannel.pair(preferredFrameSize: 512)
        ca.hold()
        let session = a.engine.connect(ca)
        // A scripted peer that subscribes, and asks for a blob a has and many it has not,
        // without end, while a's side of the link takes nothing.
        var encoder = FrameEncoder()
        try peer.sendRaw(encoder.encode(.hello(Hello(peerID: [9, 9, 9, 9, 9, 9, 9, 9], protocolVersion: SyncSession.protocolVersion))))
        encoder.context.intern(a.store.site)
        try peer.sendRaw(encoder.encode(.subscribe(Subscribe(subscriptionID: 1, query: "SELECT * FROM orders"))))
        try peer.sendRaw(encoder.encode(.summary(Summary(subscriptionID: 1, version: VersionVector()))))
        for i in 0..<3_000 {
            let hash = i % 100 == 0 ? token.hash : [UInt8](repeating: UInt8(i % 251), count: 31) + [UInt8(i / 251)]
            try peer.sendRaw(encoder.encode(.attachmentRequest(AttachmentRequest(hash: hash, chunkSize: 400))))
        }
        try await Task.sleep(for: .milliseconds(300))
        let queued = await session.queuedMessages
        #expect(queued <= SyncSession.queueLimit, "\(queued) messages queued")
        #expect(ca.waitingSends.most <= 1)
        // Once the link takes frames again, everything asked for is answered.
        ca.releaseAll()
        let answered = await eventually(120) {
            let types = ca.sentTypes
            return types.filter { $0 == .error }.count == 2_970 && types.filter { $0 == .attachmentChunk }.count >= 30 * 50_000 / 512
        }
        #expect(answered)
        #expect(await session.endReason == nil)
        a.engine.stop()
    }
}
