import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Testing

/// Peers that subscribe to the same data relay it: a write travels a chain hop by hop, never
/// back to where it came from, and never twice over one link.
@Suite("Multi-hop")
struct MultiHopTests {
    /// Peers `p0`…, each linked to the next, all subscribed to `query`.
    static func chain(_ count: Int, query: String = "SELECT * FROM orders") throws -> (peers: [Peer], links: [Connection]) {
        let peers = try (0..<count).map { try Peer("p\($0)") }
        for peer in peers { _ = try peer.subscribe(query) }
        let links = (0..<count - 1).map { connect(peers[$0], peers[$0 + 1]) }
        return (peers, links)
    }

    @Test("in a chain A—B—C, A's write reaches C; nothing is echoed back or sent twice over a link")
    func threeHops() async throws {
        let (peers, links) = try Self.chain(3)
        for link in links { #expect(await link.caughtUp()) }
        let (a, c) = (peers[0], peers[2])
        try a.store.insertOrders(0..<10)
        #expect(try await eventually { try ids(c.store, "orders").count == 10 })
        try a.store.collection("orders").findByID("o0003").update { $0["status"].set("FILLED") }
        #expect(try await eventually { try c.store.collection("orders").findByID("o0003").exec()?[path: ["status"]] == "FILLED" })
        try await Task.sleep(for: .milliseconds(100))
        for link in links {
            let forward = try keysSent(link.leftChannel), backward = try keysSent(link.rightChannel)
            #expect(forward.count == 11, "each of the 10 orders, and the one update, crossed once")
            #expect(backward.isEmpty, "nothing went back towards A: \(backward)")
        }
        for peer in peers { peer.engine.stop() }
    }

    @Test("in a chain of six, writes at both ends reach the other end, once per link and direction")
    func sixHops() async throws {
        let (peers, links) = try Self.chain(6)
        for link in links { #expect(await link.caughtUp()) }
        try peers[0].store.insertOrders(0..<20)
        try peers[5].store.insertOrders(100..<120)
        try peers[2].store.collection("orders").upsert(["_id": "middle", "status": "OPEN"])
        for peer in peers {
            #expect(try await eventually { try ids(peer.store, "orders").count == 41 }, "\(peer.engine.options.name) has \((try? ids(peer.store, "orders"))?.count ?? -1)")
        }
        try await Task.sleep(for: .milliseconds(100))
        for link in links {
            let forward = try keysSent(link.leftChannel), backward = try keysSent(link.rightChannel)
            #expect(repeated(forward).isEmpty && repeated(backward).isEmpty)
            #expect(Set(forward).isDisjoint(with: Set(backward)), "a document crossed a link both ways")
            #expect(forward.count + backward.count == 41)
        }
        let contentsAtEnds = try (contents(peers[0].store, "orders"), contents(peers[5].store, "orders"))
        #expect(contentsAtEnds.0 == contentsAtEnds.1)
        for peer in peers { peer.engine.stop() }
    }

    @Test("a relay that subscribes to a narrower query relays only what it subscribes to, and vouches for no more")
    func narrowRelay() async throws {
        let a = try Peer("a"), b = try Peer("b"), c = try Peer("c")
        try a.store.insertOrders(0..<10, status: "OPEN")
        try a.store.insertOrders(10..<20, status: "FILLED")
        _ = try a.subscribe("SELECT * FROM orders")
        _ = try b.subscribe("SELECT * FROM orders WHERE status = 'OPEN'")
        _ = try c.subscribe("SELECT * FROM orders")
        let ab = connect(a, b), bc = connect(b, c)
        #expect(await ab.caughtUp())
        #expect(await bc.caughtUp())
        try await Task.sleep(for: .milliseconds(50))
        #expect(try ids(b.store, "orders").count == 10)
        #expect(try ids(c.store, "orders") == (0..<10).map { String(format: "o%04d", $0) })
        #expect(try keysSent(bc.leftChannel).allSatisfy { Int($0.id.stringValue!.dropFirst())! < 10 })
        // What c learnt through b does not stop a from sending c the filled orders.
        let ac = connect(a, c)
        #expect(await ac.caughtUp())
        #expect(try await eventually { try ids(c.store, "orders").count == 20 })
        for peer in [a, b, c] { peer.engine.stop() }
    }
}
