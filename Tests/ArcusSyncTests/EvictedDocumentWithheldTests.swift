import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Synchronization
import Testing

/// Found by Tools/test-network.sh (16 hosts, seed 16): a document evicted while a subscription
/// matched it came back first as a part — another peer's new field, sent as an ordinary change
/// before any peer answered for the whole — and readers saw that part as the document. Its
/// owner deleted it, the delete removed only the part it saw, and the fields the owner wrote
/// at insert came back on every peer. Until it is whole again, the document is withheld from
/// readers and writes, as it already was from peers.
@Suite("Evicted documents are withheld until whole")
struct EvictedDocumentWithheldTests {
    @Test("evict, a peer's change arrives, delete: nothing written before the delete comes back",
          arguments: Array(0..<24))
    func evictedThenDeleted(_ seed: Int) async throws {
        print("seed \(seed) (replay: --filter EvictedDocumentWithheldTests with this argument)")
        var random = SplitMix64(seed: UInt64(seed))
        let a = try Peer("a"), b = try Peer("b"), c = try Peer("c")
        for peer in [a, b, c] { _ = try peer.subscribe("SELECT * FROM docs") }
        _ = try a.store.execute("INSERT INTO docs DOCUMENTS ({'_id': 'x', 'owner': 'a', 'created': 1})")
        let ab = connect(a, b), bc = connect(b, c)
        var ac = connect(a, c)
        #expect(await allCaughtUp(ab, bc, ac))
        if random.next() % 2 == 0 { ac.close(); await ac.ended() }

        _ = try a.store.execute("EVICT FROM docs WHERE _id = 'x'")
        _ = try c.store.execute("UPDATE docs SET shared = 'c' WHERE _id = 'x'")
        try await Task.sleep(for: .milliseconds(Int(random.next() % 20)))
        _ = try b.store.execute("UPDATE docs SET fromB = 1 WHERE _id = 'x'")
        try await Task.sleep(for: .milliseconds(Int(random.next() % 20)))

        // Whatever a reads now is either nothing or the whole document.
        let seen = try a.store.execute("SELECT * FROM docs").items
        for document in seen { #expect(document[path: ["owner"]] == .string("a"), "a part was shown: \(document.jsonString)") }
        let deleted = try a.store.execute("DELETE FROM docs WHERE _id = 'x'").mutatedDocumentIDs
        if ac.leftChannel.isClosed { ac = connect(a, c) }
        #expect(await allCaughtUp(ab, bc, ac))
        #expect(try await eventually { try contents(a.store, "docs") == contents(b.store, "docs") && contents(b.store, "docs") == contents(c.store, "docs") })
        let final = try contents(b.store, "docs").joined()
        if deleted.isEmpty {
            // Not back yet when the delete ran: it deleted nothing, and the document returns whole.
            #expect(final.contains("\"owner\":\"a\""), "\(final)")
        } else {
            #expect(!final.contains("owner") && !final.contains("created"), "deleted fields came back: \(final)")
        }
        for peer in [a, b, c] { peer.engine.stop() }
    }

    @Test("a withheld document shows again, to readers and observers, once it is whole")
    func shownAgainWhenWhole() async throws {
        let a = try Peer("a"), b = try Peer("b")
        for peer in [a, b] { _ = try peer.subscribe("SELECT * FROM docs") }
        _ = try a.store.execute("INSERT INTO docs DOCUMENTS ({'_id': 'x', 'owner': 'a'})")
        let first = connect(a, b)
        #expect(await first.caughtUp())
        first.close()
        await first.ended()
        _ = try a.store.execute("EVICT FROM docs WHERE _id = 'x'")
        #expect(a.store.withheldDocuments.count == 1)
        let seen = ObservedItems()
        let observer = try a.store.registerObserver("SELECT * FROM docs") { event in seen.set(event.items.count) }
        let second = connect(a, b)
        #expect(await second.caughtUp())
        #expect(try await eventually { try ids(a.store, "docs") == ["x"] })
        #expect(a.store.withheldDocuments.isEmpty)
        #expect(try await eventually { seen.last == 1 })
        observer.cancel()
        a.engine.stop(); b.engine.stop()
    }
}

private func allCaughtUp(_ connections: Connection...) async -> Bool {
    var all = true
    for connection in connections where !(await connection.caughtUp()) { all = false }
    return all
}

private final class ObservedItems: Sendable {
    private let count = Mutex<Int?>(nil)
    func set(_ value: Int) { count.withLock { $0 = value } }
    var last: Int? { count.withLock { $0 } }
}
