import ArcusCRDT
import ArcusCodec
import ArcusStore
@testable import ArcusSync
import ArcusTestSupport
import Foundation
import Testing

/// Evicting what an active subscription matches is a trap: peers send it straight back. The
/// engine warns and asks for it back at once; cancel, evict, resubscribe keeps it away while
/// cancelled and brings back only what is missing.
@Suite("Eviction and subscriptions")
struct EvictionTrapTests {
    @Test("evicting documents an active subscription matches warns, and they come straight back")
    func trap() async throws {
        let a = try Peer("a"), b = try Peer("b")
        try a.store.insertOrders(0..<50)
        _ = try b.subscribe("SELECT * FROM orders")
        let connection = connect(a, b)
        #expect(await connection.caughtUp())
        let before = await connection.left.statistics.documentsSent
        #expect(try b.store.collection("orders").find("n = 3 OR n = 40").evict().count == 2)
        #expect(b.log.contains(.warning, "evicted documents match the active subscription"))
        #expect(try await eventually { try ids(b.store, "orders").count == 50 })
        try await Task.sleep(for: .milliseconds(100))
        // Only the two evicted orders were sent again.
        #expect(await connection.left.statistics.documentsSent - before == 2)
        #expect(try contents(b.store, "orders") == contents(a.store, "orders"))
        a.engine.stop(); b.engine.stop()
    }

    @Test("cancel, evict, resubscribe: nothing returns while cancelled; then only what is missing")
    func cancelEvictResubscribe() async throws {
        let a = try Peer("a"), b = try Peer("b")
        try a.store.insertOrders(0..<50)
        let subscription = try b.subscribe("SELECT * FROM orders")
        let connection = connect(a, b)
        #expect(await connection.caughtUp())
        subscription.cancel()
        // Once a has taken in the cancellation it sends b nothing more: before, it sends b the two
        // orders written next, b drops them, and they go again after b subscribes (a fixed 50 ms
        // was not always enough on a loaded machine).
        #expect(await servesNothing(connection.left))
        #expect(try b.store.collection("orders").find("n < 5").evict().count == 5)
        #expect(!b.log.contains(.warning, "evicted"))
        try a.store.insertOrders(50..<52)
        try await Task.sleep(for: .milliseconds(200))
        #expect(try ids(b.store, "orders").count == 45)
        let before = await connection.left.statistics.documentsSent

        _ = try b.subscribe("SELECT * FROM orders")
        #expect(await connection.right.waitUntilCaughtUp())
        #expect(try await eventually { try ids(b.store, "orders").count == 52 })
        try await Task.sleep(for: .milliseconds(100))
        // The five evicted and the two written meanwhile; none of the 45 b kept.
        #expect(await connection.left.statistics.documentsSent - before == 7)
        a.engine.stop(); b.engine.stop()
    }

    @Test("evicting while disconnected, then reconnecting, asks only for what was evicted")
    func evictOffline() async throws {
        let a = try Peer("a"), b = try Peer("b")
        try a.store.insertOrders(0..<50)
        let subscription = try b.subscribe("SELECT * FROM orders")
        let first = connect(a, b)
        #expect(await first.caughtUp())
        first.close()
        await first.ended()
        subscription.cancel()
        #expect(try b.store.collection("orders").find("n >= 20 AND n < 23").evict().count == 3)
        _ = try b.subscribe("SELECT * FROM orders")
        let second = connect(a, b)
        #expect(await second.caughtUp())
        #expect(try ids(b.store, "orders").count == 50)
        #expect(await second.left.statistics.documentsSent == 3)
        // Once back, the evicted documents are no longer asked for.
        second.close()
        await second.ended()
        let third = connect(a, b)
        #expect(await third.caughtUp())
        #expect(await third.left.statistics.documentsSent == 0)
        a.engine.stop(); b.engine.stop()
    }
}

/// Waits until `session` serves the peer no subscription (it took in their cancellations).
private func servesNothing(_ session: SyncSession, seconds: Double = 20) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if await session.served.isEmpty { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return await session.served.isEmpty
}
