import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Testing

/// Found by Tools/test-network.sh (16 hosts, seed 16, with clock steps): a host wrote a field of
/// a document, evicted the document, and got it back from a peer that had never had that write.
/// After three such answers the write counted as lost for good (`ownFloor`), yet the peers that
/// did hold it never sent it back: a server takes every event a peer made itself as known to
/// it. The host ended without its own acknowledged write, which all the others held.
@Suite("A store gets back its own writes that an eviction took")
struct OwnWriteAfterEvictionTests {
    /// `c` never had a's write, or (the network bed in the VM, 200 ms jitter) had an older one of a's:
    /// a got back a stale copy of its own write and no peer sent the newer one.
    @Test("evicted, answered three times without the write, then a peer that has it comes",
          arguments: [false, true])
    func ownWriteComesBack(cHasAnOlderWrite: Bool) async throws {
        let a = try Peer("a"), b = try Peer("b"), c = try Peer("c")
        for peer in [a, b, c] { _ = try peer.subscribe("SELECT * FROM docs") }
        _ = try b.store.execute("INSERT INTO docs DOCUMENTS ({'_id': 'z', 'owner': 'b'})")
        if cHasAnOlderWrite { _ = try a.store.execute("UPDATE docs SET shared = 'a, older' WHERE _id = 'z'") }
        let ab = connect(a, b), ac = connect(a, c)
        #expect(await ab.caughtUp())
        #expect(await ac.caughtUp())
        #expect(try await eventually { try ids(a.store, "docs") == ["z"] && ids(c.store, "docs") == ["z"] })
        ac.close()
        await ac.ended()

        // c is away when a writes; b takes the write, then goes away too.
        _ = try a.store.execute("UPDATE docs SET shared = 'a' WHERE _id = 'z'")
        #expect(try await eventually { try contents(b.store, "docs") == contents(a.store, "docs") })
        #expect(await ab.caughtUp())
        ab.close()
        await ab.ended()

        // a evicts it, and c — which never had a's write — answers for it until a gives up.
        _ = try a.store.execute("EVICT FROM docs WHERE _id = 'z'")
        let again = connect(a, c)
        #expect(try await eventually { try a.store.withheldDocuments.isEmpty && ids(a.store, "docs") == ["z"] })
        again.close()
        await again.ended()

        // b, which holds the write, comes back: a must get its own write back from it.
        let back = connect(a, b)
        #expect(await back.caughtUp())
        let same = try await eventually { try contents(a.store, "docs") == contents(b.store, "docs") }
        let (held, theirs) = (try contents(a.store, "docs"), try contents(b.store, "docs"))
        #expect(same, "a: \(held), b: \(theirs)")
        back.close()
        await back.ended()
        for peer in [a, b, c] { peer.engine.stop() }
    }
}
