import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Testing

/// DELETE is synced; EVICT is local and never leaves the store that did it.
@Suite("Removals and evictions")
struct RemovalTests {
    @Test("a removal travels through hops")
    func removalThroughHops() async throws {
        let (peers, links) = try MultiHopTests.chain(4)
        for link in links { #expect(await link.caughtUp()) }
        try peers[0].store.insertOrders(0..<5)
        #expect(try await eventually { try ids(peers[3].store, "orders").count == 5 })
        try peers[0].store.collection("orders").findByID("o0002").remove()
        for peer in peers {
            #expect(try await eventually { try ids(peer.store, "orders") == ["o0000", "o0001", "o0003", "o0004"] })
        }
        // And from the far end back.
        try peers[3].store.collection("orders").findByID("o0004").remove()
        #expect(try await eventually { try ids(peers[0].store, "orders") == ["o0000", "o0001", "o0003"] })
        for peer in peers { peer.engine.stop() }
    }

    @Test("a concurrent write ordered before the removed value does not resurrect the document")
    func olderConcurrentWrite() async throws {
        // c's wall clock runs a minute behind: its offline write is ordered before a's.
        let a = try Peer("a"), b = try Peer("b")
        let c = try Peer("c", clock: { HybridLogicalClock.wallClock() - 60_000 })
        for peer in [a, b, c] { _ = try peer.subscribe("SELECT * FROM orders") }
        let ab = connect(a, b)
        var bc = connect(b, c)
        try a.store.collection("orders").upsert(["_id": "d", "status": "OPEN", "qty": 1])
        #expect(try await eventually { try ids(c.store, "orders") == ["d"] })
        bc.close()
        await bc.ended()
        try c.store.collection("orders").findByID("d").update { $0["status"].set("C-OFFLINE") }
        try a.store.collection("orders").findByID("d").update { $0["status"].set("A") }
        try a.store.collection("orders").findByID("d").remove()
        #expect(try await eventually { try ids(b.store, "orders").isEmpty })
        bc = connect(b, c)
        #expect(await bc.caughtUp())
        for peer in [a, b, c] {
            #expect(try await eventually { try ids(peer.store, "orders").isEmpty }, "\(peer.engine.options.name): \((try? contents(peer.store, "orders")) ?? [])")
        }
        try await Task.sleep(for: .milliseconds(100))
        for peer in [a, b, c] { #expect(try ids(peer.store, "orders").isEmpty) }
        _ = ab
        for peer in [a, b, c] { peer.engine.stop() }
    }

    @Test("an eviction never propagates, in either direction")
    func evictionsStayLocal() async throws {
        let a = try Peer("a"), b = try Peer("b"), c = try Peer("c")
        try a.store.insertOrders(0..<5)
        let bOrders = try b.subscribe("SELECT * FROM orders")
        _ = try c.subscribe("SELECT * FROM orders")
        let ab = connect(a, b), bc = connect(b, c)
        #expect(await ab.caughtUp())
        #expect(try await eventually { try ids(c.store, "orders").count == 5 })
        // a subscribes to nothing: its eviction is its own business.
        #expect(try a.store.collection("orders").findByID("o0001").evict())
        // b cancels first, so the data does not come straight back, then evicts.
        bOrders.cancel()
        try await Task.sleep(for: .milliseconds(50))
        #expect(try b.store.collection("orders").findByID("o0002").evict())
        try a.store.collection("orders").upsert(["_id": "o0000", "status": "CHANGED"])
        try await Task.sleep(for: .milliseconds(200))
        #expect(try ids(a.store, "orders") == ["o0000", "o0002", "o0003", "o0004"])
        #expect(try ids(b.store, "orders") == ["o0000", "o0001", "o0003", "o0004"])
        #expect(try ids(c.store, "orders").count == 5)
        #expect(!b.log.contains(.warning, "evicted"))
        _ = bc
        for peer in [a, b, c] { peer.engine.stop() }
    }
}
