import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Testing

/// Acknowledgements advance a per-peer position that is kept in the store: a session cut
/// mid-backfill, or a restart, resumes where the peer's acknowledgements got to.
@Suite("Resume")
struct ResumeTests {
    static let total = 1000

    @Test("a session cut mid-backfill resumes from the acknowledged position")
    func afterCut() async throws {
        let a = try Peer("a", batchSize: 50), b = try Peer("b", batchSize: 50)
        try a.store.insertOrders(0..<Self.total)
        _ = try b.subscribe("SELECT * FROM orders")
        let first = connect(a, b)
        // A slow link (so a does not run far ahead of b), which dies after a's eighth batch.
        first.leftChannel.delay.withLock { $0 = .milliseconds(3) }
        first.leftChannel.cut(after: 8, where: TestChannel.isType(.deltaBatch))
        await first.ended()
        let arrived = try ids(b.store, "orders").count
        #expect(arrived >= 50 && arrived < Self.total)

        let second = connect(a, b)
        #expect(await second.caughtUp())
        #expect(try ids(b.store, "orders").count == Self.total)
        let sentSecond = await second.left.statistics.documentsSent
        // b's summary says where its merges got to (its acknowledgements may not all have
        // arrived: they wait to be coalesced): nothing it merged is sent again.
        #expect(sentSecond == Self.total - arrived, "sent again: \(sentSecond) of \(Self.total), \(arrived) had arrived")
        a.engine.stop(); b.engine.stop()
    }

    @Test("after both stores restart from their directories, sync resumes where it stopped")
    func afterRestart() async throws {
        let directoryA = TemporaryDirectory(), directoryB = TemporaryDirectory()
        defer { directoryA.remove(); directoryB.remove() }
        var arrived = 0
        do {
            let a = try Peer("a", store: Store(directory: directoryA.url), batchSize: 50)
            let b = try Peer("b", store: Store(directory: directoryB.url), batchSize: 50)
            try a.store.insertOrders(0..<Self.total)
            _ = try b.subscribe("SELECT * FROM orders WHERE n >= 0")
            let first = connect(a, b)
            first.leftChannel.delay.withLock { $0 = .milliseconds(3) }
            first.leftChannel.cut(after: 8, where: TestChannel.isType(.deltaBatch))
            await first.ended()
            arrived = try ids(b.store, "orders").count
            a.engine.stop(); b.engine.stop()
        }
        #expect(arrived >= 50 && arrived < Self.total)
        // The old stores go away once the last task holding them has finished.
        var reopened: (Store, Store)?
        #expect(await eventually {
            reopened = try? (Store(directory: directoryA.url), Store(directory: directoryB.url))
            return reopened != nil
        })
        let a = try Peer("a", store: reopened!.0, batchSize: 50), b = try Peer("b", store: reopened!.1, batchSize: 50)
        reopened = nil
        // The subscription came back from b's store; nothing registers it again.
        #expect(b.engine.subscriptions.map(\.text) == ["SELECT * FROM orders WHERE n >= 0"])
        #expect(try ids(b.store, "orders").count == arrived)
        let second = connect(a, b)
        #expect(await second.caughtUp())
        #expect(try ids(b.store, "orders").count == Self.total)
        let sentSecond = await second.left.statistics.documentsSent
        // What b merged before the restart is in its store, and its summary says so.
        #expect(sentSecond == Self.total - arrived, "sent again: \(sentSecond) of \(Self.total), \(arrived) had arrived")
        // And a third session, with nothing new, sends no document at all.
        second.close()
        await second.ended()
        let third = connect(a, b)
        #expect(await third.caughtUp())
        #expect(await third.left.statistics.documentsSent == 0)
        a.engine.stop(); b.engine.stop()
    }

    @Test("a subscriber whose store comes back from an old backup gets again what the backup lacks")
    func restoredFromBackup() async throws {
        let directory = TemporaryDirectory(), backup = TemporaryDirectory()
        defer { directory.remove(); backup.remove() }
        // a subscribes to nothing, so it vouches for nothing: only b's own record of what it
        // merged can tell a that b lost some of it.
        let a = try Peer("a", batchSize: 50)
        try a.store.insertOrders(0..<300)

        /// Runs one session of b, from its directory, until b has `count` orders.
        func session(_ count: Int, subscribe: Bool = false) async throws {
            var store: Store?
            #expect(await eventually {
                store = try? Store(directory: directory.url)
                return store != nil
            })
            let b = try Peer("b", store: store!, batchSize: 50)
            store = nil
            if subscribe { _ = try b.subscribe("SELECT * FROM orders") }
            let connection = connect(a, b)
            #expect(await connection.caughtUp())
            #expect(try await eventually { try ids(b.store, "orders").count == count })
            try await Task.sleep(for: .milliseconds(50))
            connection.close()
            await connection.ended()
            b.engine.stop()
        }

        try await session(300, subscribe: true)
        // The old stores go away with the last task that held them; copy b's directory then.
        #expect(await eventually {
            guard let probe = try? Store(directory: directory.url) else { return false }
            _ = probe
            return true
        })
        try FileManager.default.copyItem(at: directory.url, to: backup.url)
        try a.store.insertOrders(300..<600)
        try await session(600)
        // b's disk is restored from the backup: it lost orders 300–599, which a has seen it
        // acknowledge.
        try FileManager.default.removeItem(at: directory.url)
        try FileManager.default.copyItem(at: backup.url, to: directory.url)
        try await session(600)
        a.engine.stop()
    }

    @Test("a summary that knows less than the peer said before makes the server go through its whole log again")
    func summaryKnowsLess() async throws {
        let a = try Peer("a", batchSize: 20)
        try a.store.insertOrders(0..<50)
        let middle = a.store.version
        try a.store.insertOrders(50..<100)
        let latest = a.store.version
        let subscriber: [UInt8] = [5, 5, 5, 5, 5, 5, 5, 5]

        /// One session of a scripted subscriber that says `version`; returns the documents a sent.
        func session(_ version: VersionVector, subscribe: Bool) async throws -> [DocumentKey] {
            let (channel, peer) = TestChannel.pair()
            let session = a.engine.connect(channel)
            var encoder = FrameEncoder()
            try peer.sendRaw(encoder.encode(.hello(Hello(peerID: subscriber, protocolVersion: SyncSession.protocolVersion))))
            encoder.context.intern(a.store.site)
            if subscribe { try peer.sendRaw(encoder.encode(.subscribe(Subscribe(subscriptionID: 1, query: "SELECT * FROM orders")))) }
            try peer.sendRaw(encoder.encode(.summary(Summary(subscriptionID: 1, version: version))))
            #expect(await eventually {
                ((try? channel.sentMessages()) ?? []).contains { if case .deltaBatch(let batch) = $0 { return batch.answers > 0 } else { return false } }
            })
            // Acknowledge every position, as a subscriber that merged the batches would.
            for case .deltaBatch(let batch) in try channel.sentMessages() {
                if let position = batch.position { try peer.sendRaw(encoder.encode(.ack(Ack(position: position, subscriptionID: 1)))) }
            }
            try await Task.sleep(for: .milliseconds(50))
            peer.close()
            await session.waitUntilEnded()
            return try keysSent(channel)
        }

        #expect(try await session(VersionVector(), subscribe: true).count == 100)
        #expect(try await session(latest, subscribe: false).isEmpty)
        // It lost the second half (say it came back from a backup).
        let resent = try await session(middle, subscribe: false)
        #expect(resent == (50..<100).map { DocumentKey("orders", String(format: "o%04d", $0)) })
        a.engine.stop()
    }
}
