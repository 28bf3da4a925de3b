import ArcusCRDT
import Testing
@testable import ArcusStore

/// `Store.contentDigest(of:)`: what `arcus bench lan` compares two agents' stores with, without
/// holding either's documents in memory.
@Suite("A collection's content digest")
struct ContentDigestTests {
    @Test("two stores with the same documents, written in another order, have the same digest")
    func sameDocumentsSameDigest() throws {
        let (a, b) = (try TemporaryStore(), try TemporaryStore())
        _ = try a.store.execute("INSERT INTO orders DOCUMENTS ({'_id': 'x', 'n': 1}), ({'_id': 'y', 'n': 2})")
        _ = try b.store.execute("INSERT INTO orders DOCUMENTS ({'_id': 'y', 'n': 2})")
        _ = try b.store.execute("INSERT INTO orders DOCUMENTS ({'_id': 'x', 'n': 1})")
        // Another collection and removed documents are not part of it.
        _ = try b.store.execute("INSERT INTO other DOCUMENTS ({'_id': 'z'})")
        _ = try b.store.execute("INSERT INTO orders DOCUMENTS ({'_id': 'gone'})")
        _ = try b.store.execute("DELETE FROM orders WHERE _id = 'gone'")
        let (digestA, digestB) = (try a.store.contentDigest(of: "orders"), try b.store.contentDigest(of: "orders"))
        #expect(digestA.documents == 2)
        #expect(digestA.sha256 == digestB.sha256)
    }

    @Test("a field's value, an id or a missing document changes the digest")
    func differencesShow() throws {
        let base = try TemporaryStore()
        _ = try base.store.execute("INSERT INTO orders DOCUMENTS ({'_id': 'x', 'n': 1}), ({'_id': 'y', 'n': 2})")
        let digest = try base.store.contentDigest(of: "orders")
        for statements in [
            ["INSERT INTO orders DOCUMENTS ({'_id': 'x', 'n': 1}), ({'_id': 'y', 'n': 3})"],
            ["INSERT INTO orders DOCUMENTS ({'_id': 'x', 'n': 1}), ({'_id': 'z', 'n': 2})"],
            ["INSERT INTO orders DOCUMENTS ({'_id': 'x', 'n': 1})"],
        ] {
            let other = try TemporaryStore()
            for statement in statements { _ = try other.store.execute(statement) }
            #expect(try other.store.contentDigest(of: "orders").sha256 != digest.sha256, "\(statements)")
        }
        #expect(try TemporaryStore().store.contentDigest(of: "orders").documents == 0)
    }
}
