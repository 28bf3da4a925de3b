import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Testing

/// A member whose clock is far ahead, or that lies about the time, through the real protocol:
/// what it stamps beyond the receiver's bound is not merged, does not move the receiver's
/// clock, and is not passed on; the receiver's later writes still win and are sent.
@Suite("Clock poisoning through sync")
struct ClockPoisoningTests {
    /// The latest time anything in `store` is stamped with, cells and versions alike.
    static func latestTime(_ store: Store) throws -> Timestamp {
        var latest = store.version.maxTime
        for document in try store.changes(after: 0, since: .empty, limit: 10_000).batch.documents {
            latest = max(latest, document.state.version.maxTime)
            for cell in document.state.cells where cell.kind != .field { latest = max(latest, cell.event.time, cell.order.time) }
        }
        return latest
    }

    @Test("a member whose clock reads the end of time wins nothing and drags no clock; later local writes win and are sent")
    func memberFarAhead() async throws {
        // Its wall clock reads the last millisecond a timestamp holds: its writes are stamped
        // within 2^17 of UInt64.max.
        let liar = try Peer("liar", clock: { Timestamp.maxMilliseconds - 1 })
        let victim = try Peer("victim"), honest = try Peer("honest")
        try victim.store.insertOrders(0..<3)
        try liar.store.insertOrders(0..<3, status: "HACKED")
        try liar.store.collection("orders").upsert(["_id": "o0009", "status": "HACKED"])
        for peer in [liar, victim, honest] { _ = try peer.subscribe("SELECT * FROM orders") }
        let before = try contents(victim.store, "orders")

        let link = connect(victim, liar)
        #expect(await link.caughtUp())
        // The liar did send its writes (the victim's own documents included)...
        #expect(try Set(keysSent(link.rightChannel)).isSuperset(of: [DocumentKey("orders", "o0001"), DocumentKey("orders", "o0009")]))
        // ...and the victim has everything the liar had as of its summary, and took none of it in.
        #expect(try contents(victim.store, "orders") == before)
        let bound = victim.store.latestAdmissibleTime
        #expect(try Self.latestTime(victim.store) <= bound)

        // A local write now is stamped by a sane clock, and wins.
        try victim.store.collection("orders").findByID("o0001").update { $0["status"].set("CLOSED") }
        #expect(try victim.store.collection("orders").findByID("o0001").exec()?[path: ["status"]] == "CLOSED")
        #expect(victim.store.version[victim.store.site]! <= bound)

        // It is sent, and the liar's writes are not passed on.
        let onward = connect(victim, honest)
        #expect(await onward.caughtUp())
        #expect(try await eventually { try contents(honest.store, "orders") == contents(victim.store, "orders") })
        #expect(try ids(honest.store, "orders") == ["o0000", "o0001", "o0002"])
        #expect(try honest.store.collection("orders").findByID("o0001").exec()?[path: ["status"]] == "CLOSED")
        #expect(try Self.latestTime(honest.store) <= honest.store.latestAdmissibleTime)
        for peer in [liar, victim, honest] { peer.engine.stop() }
    }

    @Test("a hand-made batch stamped at UInt64.max itself: the clock does not wrap, and the next local write wins")
    func batchAtTheVeryEnd() async throws {
        let victim = try Peer("victim")
        try victim.store.insertOrders(0..<3)
        _ = try victim.subscribe("SELECT * FROM orders")
        let (mallory, channel) = TestChannel.pair()
        let session = victim.engine.connect(channel)
        let peerID: [UInt8] = [6, 6, 6, 6, 6, 6, 6, 6]
        let site = try #require(SiteID(peerID: peerID))
        var encoder = FrameEncoder()
        try mallory.sendRaw(encoder.encode(.hello(Hello(peerID: peerID, protocolVersion: SyncSession.protocolVersion, name: "mallory"))))
        encoder.context.intern(victim.store.site)
        // A batch may only answer a subscription the victim announced in this session.
        #expect(try await eventually {
            try channel.sentMessages().contains { if case .summary(let summary) = $0 { summary.subscriptionID == 1 } else { false } }
        })

        // In its own name, at the last time there is: a victim whose clock took it in would
        // stamp its next write at max + 1, which wraps to zero and loses to everything.
        var poisoned = DocumentState()
        _ = poisoned.set(["status"], to: "HACKED", at: Stamp(time: .max, site: site))
        try mallory.sendRaw(encoder.encode(.deltaBatch(DeltaBatch(
            documents: [DocumentDelta(key: DocumentKey("orders", "o0001"), state: poisoned)],
            covers: VersionVector([site: .max]), position: 1, subscriptionID: 1))))
        // Then a write in time, so the test knows the first batch was handled before it.
        var sane = DocumentState()
        _ = sane.set(["status"], to: "SEEN", at: Stamp(time: Timestamp(milliseconds: HybridLogicalClock.wallClock()), site: site))
        try mallory.sendRaw(encoder.encode(.deltaBatch(DeltaBatch(
            documents: [DocumentDelta(key: DocumentKey("orders", "o0002"), state: sane)], position: 2, subscriptionID: 1))))
        #expect(try await eventually { try victim.store.collection("orders").findByID("o0002").exec()?[path: ["status"]] == "SEEN" })

        #expect(try victim.store.collection("orders").findByID("o0001").exec()?[path: ["status"]] == "OPEN")
        try victim.store.collection("orders").findByID("o0001").update { $0["status"].set("CLOSED") }
        #expect(try victim.store.collection("orders").findByID("o0001").exec()?[path: ["status"]] == "CLOSED")
        let written = try #require(victim.store.version[victim.store.site])
        #expect(written > Timestamp(milliseconds: HybridLogicalClock.wallClock() - 60_000) && written <= victim.store.latestAdmissibleTime)
        #expect(try Self.latestTime(victim.store) <= victim.store.latestAdmissibleTime)
        channel.close()
        await session.waitUntilEnded()
        victim.engine.stop()
    }
}
