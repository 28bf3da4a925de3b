import ArcusCRDT
import ArcusCodec
import ArcusStore
@testable import ArcusSync
import ArcusTestSupport
import Foundation
import Testing

/// A merge's echo: the log positions whose documents hold nothing the sender lacks, which the
/// session serving that sender passes over unread (`SyncSession.passEchoes`).
@Suite("Echoed stretches")
struct EchoedStretchTests {
    /// Merges `documents` into `store` in one transaction; returns the stretch they formed and
    /// the positions the merge logged.
    static func merge(_ documents: [DocumentDelta], into store: Store) throws -> (echoes: ClosedRange<Int64>?, logged: [Int64]) {
        var stretch = EchoedStretch()
        var logged: [Int64] = []
        try store.write { tx in
            for delta in documents where try tx.merge(delta) {
                stretch.add(tx.changes.last, sent: delta)
                logged.append(tx.changes.last!.sequence)
            }
        }
        return (stretch.positions, logged)
    }

    static func documents(of store: Store) throws -> [DocumentDelta] {
        try store.changes(after: 0, since: VersionVector(), limit: 10_000).batch.documents
    }

    @Test("whole documents merged into a store without them form one stretch: every position the merge logged, and nothing else")
    func wholeDocuments() throws {
        let a = try Store(inMemory: Store.Options()), b = try Store(inMemory: Store.Options())
        try a.insertOrders(0..<40)
        try b.insertOrders(0..<3, collection: "notes")  // b's log does not start at 1
        let before = try b.lastLoggedPosition()
        let (echoes, logged) = try Self.merge(Self.documents(of: a), into: b)
        #expect(logged == Array(before + 1...before + 40))
        #expect(echoes == before + 1...before + 40, "\(String(describing: echoes))")
        // Merged again, nothing changes: no stretch.
        #expect(try Self.merge(Self.documents(of: a), into: b).echoes == nil)
    }

    @Test("a merged document that keeps an event of the receiver's own, which the sender lacks, breaks the stretch")
    func receiverAddsSomething() throws {
        let a = try Store(inMemory: Store.Options()), b = try Store(inMemory: Store.Options())
        try a.insertOrders(0..<10)
        // b wrote another field of o0005 itself: the merged o0005 holds b's event.
        try b.write { tx in _ = try tx.upsert(["_id": "o0005", "note": "b's"], into: "orders") }
        let (echoes, logged) = try Self.merge(Self.documents(of: a), into: b)
        #expect(logged.count == 10)
        #expect(echoes == nil)
    }

    @Test("a merged document that keeps a third store's event, which the sender lacks, breaks the stretch where it stands")
    func thirdStoresEvent() throws {
        let a = try Store(inMemory: Store.Options()), b = try Store(inMemory: Store.Options()), c = try Store(inMemory: Store.Options())
        try a.insertOrders(0..<5)
        try c.write { tx in _ = try tx.upsert(["_id": "o0003", "from": "c"], into: "orders") }
        _ = try Self.merge(Self.documents(of: c), into: b)
        let documents = try Self.documents(of: a)
        #expect(try Self.merge(Array(documents.prefix(3)), into: b).echoes != nil)
        #expect(try Self.merge(Array(documents[3...]), into: b).echoes == nil)
    }

    @Test("a peer catching up passes the echo of what it merged, yet every write of its own made meanwhile reaches the sender, and nothing of the sender's goes back")
    func catchUpWithWritesBetween() async throws {
        let a = try Peer("a", batchSize: 50), b = try Peer("b", batchSize: 50)
        try a.store.insertOrders(0..<600)
        _ = try a.subscribe("SELECT * FROM orders")
        _ = try b.subscribe("SELECT * FROM orders")
        let link = connect(a, b)
        // b writes while it catches up: each write lands between two merges.
        for i in 0..<20 {
            try b.store.insertOrders(1000 + i..<1001 + i)
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(await link.caughtUp())
        #expect(try await eventually { try ids(a.store, "orders").count == 620 && ids(b.store, "orders").count == 620 })
        // b's session sent a only b's 20 documents: none of a's came back.
        #expect(try await eventually { await link.right.statistics.documentsSent == 20 })
        #expect(await link.right.statistics.documentsSent == 20)
        #expect(try repeated(keysSent(link.rightChannel)).isEmpty)
        #expect(try keysSent(link.rightChannel).allSatisfy { ($0.id.stringValue ?? "") >= "o1000" })
        a.engine.stop(); b.engine.stop()
    }
}
