import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Testing

/// `SyncEngine.deliveries`: every document delta merged from a peer, and the duplicates among
/// them — deltas whose events the store already had all of. The mesh demo reports them to show
/// how many copies of each change a crowded mesh hands around.
@Suite("Delivery counts")
struct DeliveryCountTests {
    @Test("in a chain A—B—C each peer is handed each of A's documents once: deliveries counted, no duplicates")
    func chainHasNoDuplicates() async throws {
        let (peers, links) = try MultiHopTests.chain(3)
        for link in links { #expect(await link.caughtUp()) }
        try peers[0].store.insertOrders(0..<10)
        #expect(try await eventually { try ids(peers[2].store, "orders").count == 10 })
        for link in links { #expect(await link.caughtUp()) }
        for peer in peers.dropFirst() {
            #expect(peer.engine.deliveries == SyncDeliveries(documents: 10, duplicates: 0), "\(peer.engine.options.name): \(peer.engine.deliveries)")
        }
        #expect(peers[0].engine.deliveries == SyncDeliveries())
        for peer in peers { peer.engine.stop() }
    }

    @Test("documents a peer already holds (merged outside sync, so its summary does not vouch for them) count as duplicates when a peer sends them")
    func heldDocumentsAreDuplicates() async throws {
        let a = try Peer("a"), b = try Peer("b")
        try a.store.insertOrders(0..<10)
        // b holds a's documents, but its version vector and its subscription's knowledge do not say so.
        var batch = try a.store.changes(after: 0, since: VersionVector()).batch
        batch.covers = nil
        try b.store.merge(batch)
        for peer in [a, b] { _ = try peer.subscribe("SELECT * FROM orders") }
        let link = connect(a, b)
        #expect(await link.caughtUp())
        let delivered = b.engine.deliveries
        #expect(delivered.documents > 0 && delivered.duplicates == delivered.documents, "\(delivered)")
        #expect(try ids(b.store, "orders").count == 10)
        for peer in [a, b] { peer.engine.stop() }
    }
}
