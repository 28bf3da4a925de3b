import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusTestSupport
import Foundation
import Testing
@testable import ArcusSync

/// The progress of a long sync: a server tells a subscriber what of its answer is still to
/// come (`SyncBacklog` on each batch of a backfill), and the subscriber's engine shows it.
@Suite("Sync progress")
struct SyncProgressTests {
    /// The batches `channel` sent for a subscription, each with its frame's bytes.
    static func batches(_ channel: TestChannel) throws -> [(batch: DeltaBatch, bytes: Int)] {
        let frames = channel.sent.withLock { $0 }
        let messages = try channel.sentMessages()
        #expect(frames.count == messages.count)
        return zip(messages, frames).compactMap { message, frame in
            if case .deltaBatch(let batch) = message, batch.subscriptionID != 0 { return (batch, frame.count) }
            return nil
        }
    }

    @Test("each batch of a backfill says how many documents are left, down to none with the last, and the estimate of bytes left is close")
    func backlogCountsDown() async throws {
        let a = try Peer("a", batchSize: 20), b = try Peer("b", batchSize: 20)
        try a.store.insertOrders(0..<2_000)
        // Another collection's rows lie in the same stretch of the log: not counted.
        try a.store.insertOrders(0..<300, collection: "invoices")
        try a.store.insertOrders(2_000..<2_100)
        _ = try b.subscribe("SELECT * FROM orders")
        let connection = connect(a, b)
        #expect(await connection.caughtUp())
        let batches = try Self.batches(connection.leftChannel)
        #expect(batches.count >= 2_100 / 20)
        var left = 2_100
        for (index, (batch, _)) in batches.enumerated() {
            left -= batch.documents.count
            let backlog = try #require(batch.backlog, "batch \(index) carries no backlog")
            #expect(backlog.documents == UInt64(left), "batch \(index): \(backlog.documents) documents said left, \(left) really")
        }
        #expect(left == 0)
        #expect(batches.last?.batch.backlog == SyncBacklog.none)
        #expect(batches.last?.batch.answers == 1)
        // From the third batch on (the first two set the ratio of frame bytes to stored bytes),
        // the bytes said to be left are within a tenth of the frame bytes that followed.
        for index in [2, 5, batches.count / 2] {
            let said = Double(try #require(batches[index].batch.backlog).bytes)
            let followed = Double(batches[(index + 1)...].reduce(0) { $0 + $1.bytes })
            #expect(abs(said - followed) <= followed / 10, "batch \(index): said \(said) bytes left, \(followed) followed")
        }

        let progress = b.engine.syncProgress
        #expect(progress.count == 1)
        let entry = try #require(progress.first)
        #expect(entry.caughtUp)
        #expect(entry.documentsReceived == 2_100)
        #expect(entry.bytesReceived == batches.reduce(0) { $0 + $1.bytes })
        #expect(entry.backlog == SyncBacklog.none)
        #expect(entry.fraction == 1)
        #expect(entry.peer.hasPrefix("a ("))
        a.engine.stop(); b.engine.stop()
    }

    @Test("while a backfill runs, the subscriber's progress shows what arrived and what is left")
    func progressMidway() async throws {
        let a = try Peer("a", batchSize: 20), b = try Peer("b", batchSize: 20)
        try a.store.insertOrders(0..<1_000)
        _ = try b.subscribe("SELECT * FROM orders")
        let (ca, cb) = TestChannel.pair()
        ca.hold()
        a.engine.connect(ca)
        let session = b.engine.connect(cb)
        // The hello, then a frame at a time until ten batches arrived: counting frames instead
        // failed in CI, where a sent one that was no batch among the first eleven (180 arrived).
        // Each step waits until the frame is through and b has taken every document sent so
        // far; a fixed wait let a slow batch land after the next was let through (220 arrived).
        ca.release(1)
        var released = 1, received = 0
        while received < 200, released < 40 {
            ca.release(1)
            released += 1
            let handled = await eventually {
                guard ca.sent.withLock({ $0.count }) == released, let sent = try? keysSent(ca).count else { return false }
                return (b.engine.syncProgress.first?.documentsReceived ?? 0) == sent
            }
            #expect(handled, "frame \(released): \(ca.sent.withLock { $0.count }) sent, \(b.engine.syncProgress.first?.documentsReceived ?? 0) received")
            received = b.engine.syncProgress.first?.documentsReceived ?? 0
        }
        #expect(received == 200)
        let midway = try #require(b.engine.syncProgress.first)
        #expect(!midway.caughtUp)
        #expect(midway.backlog?.documents == 800)
        #expect((midway.backlog?.bytes ?? 0) > 0)
        let fraction = try #require(midway.fraction)
        #expect(fraction > 0.1 && fraction < 0.3, "\(fraction)")
        ca.releaseAll()
        #expect(await session.waitUntilCaughtUp())
        #expect(b.engine.syncProgress.first?.caughtUp == true)
        #expect(b.engine.syncProgress.first?.documentsReceived == 1_000)
        // The session gone, so is its progress.
        ca.close()
        await session.waitUntilEnded()
        #expect(await eventually { b.engine.syncProgress.isEmpty })
        a.engine.stop(); b.engine.stop()
    }

    @Test("a peer whose hello does not name the backlog capability gets batches without one")
    func olderPeerGetsNoBacklog() async throws {
        let server = try Peer("server", batchSize: 20)
        try server.store.insertOrders(0..<100)
        let (old, channel) = TestChannel.pair()
        let session = server.engine.connect(channel, pulling: false)
        var encoder = FrameEncoder()
        try old.sendRaw(encoder.encode(.hello(Hello(peerID: [0, 0, 0, 0, 0, 0, 0, 9], protocolVersion: SyncSession.protocolVersion, name: "old"))))
        encoder.context.intern(server.store.site)
        try old.sendRaw(encoder.encode(.subscribe(Subscribe(subscriptionID: 1, query: "SELECT * FROM orders"))))
        try old.sendRaw(encoder.encode(.summary(Summary(subscriptionID: 1, version: VersionVector()))))
        #expect(await eventually { ((try? Self.batches(channel)) ?? []).contains { $0.batch.answers == 1 } })
        let batches = try Self.batches(channel)
        #expect(batches.reduce(0) { $0 + $1.batch.documents.count } == 100)
        #expect(batches.allSatisfy { $0.batch.backlog == nil })
        channel.close()
        await session.waitUntilEnded()
        server.engine.stop()
    }
}
