import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Testing

/// Sync is pull: a peer receives the documents its subscriptions match, and nothing else.
@Suite("Selective sync")
struct SelectiveSyncTests {
    @Test("a subscriber receives exactly what its query matches, then live changes and removals")
    func selective() async throws {
        let a = try Peer("a"), b = try Peer("b")
        for (id, status) in [("o1", "OPEN"), ("o2", "FILLED"), ("o3", "OPEN")] {
            try a.store.collection("orders").upsert(["_id": .string(id), "status": .string(status)])
        }
        try a.store.collection("cars").upsert(["_id": "c1", "make": "fiat"])
        _ = try b.subscribe("SELECT * FROM orders WHERE status != 'FILLED'")
        let connection = connect(a, b)
        #expect(await connection.caughtUp())
        #expect(try ids(b.store, "orders") == ["o1", "o3"])
        #expect(try ids(b.store, "cars") == [])
        try a.store.collection("orders").upsert(["_id": "o4", "status": "OPEN"])
        try a.store.collection("orders").upsert(["_id": "o5", "status": "FILLED"])
        #expect(try await eventually { try ids(b.store, "orders") == ["o1", "o3", "o4"] })
        try a.store.collection("orders").findByID("o1").remove()
        #expect(try await eventually { try ids(b.store, "orders") == ["o3", "o4"] })
        // The filled order never arrived, not even as a document that does not show.
        #expect(try b.store.execute("SELECT * FROM orders WHERE _id = 'o5'").items.isEmpty)
        a.engine.stop(); b.engine.stop()
    }

    @Test("a peer that subscribes to nothing receives nothing, while its neighbour gets what it asks for")
    func subscribesToNothing() async throws {
        let a = try Peer("a"), b = try Peer("b")
        try a.store.insertOrders(0..<20)
        try b.store.insertOrders(100..<110)
        _ = try a.subscribe("SELECT * FROM orders")
        let connection = connect(a, b)
        #expect(await connection.caughtUp())
        try a.store.insertOrders(20..<25)
        #expect(try await eventually { try ids(a.store, "orders").count == 35 })
        // b asked for nothing: none of a's 25 orders is there, and a sent it no document.
        #expect(try ids(b.store, "orders").count == 10)
        #expect(await connection.right.statistics.documentsReceived == 0)
        #expect(await connection.left.statistics.documentsSent == 0)
        #expect(try connection.leftChannel.sentMessages().allSatisfy { message in
            if case .deltaBatch(let batch) = message { return batch.documents.isEmpty }
            return true
        })
        a.engine.stop(); b.engine.stop()
    }

    @Test("two subscriptions of one peer each bring their documents; a document both match arrives once")
    func twoSubscriptions() async throws {
        let a = try Peer("a"), b = try Peer("b")
        try a.store.insertOrders(0..<10, status: "OPEN")
        try a.store.insertOrders(10..<20, status: "FILLED")
        try a.store.collection("cars").upsert(["_id": "c1", "make": "fiat"])
        try a.store.collection("cars").upsert(["_id": "c2", "make": "seat"])
        try a.store.collection("trucks").upsert(["_id": "t1", "make": "man"])
        _ = try b.subscribe("SELECT * FROM orders WHERE n < 15")
        _ = try b.subscribe("SELECT * FROM orders WHERE n >= 5 AND status = 'OPEN'")
        _ = try b.subscribe("SELECT * FROM cars WHERE make = 'fiat'")
        let connection = connect(a, b)
        #expect(await connection.caughtUp())
        #expect(try ids(b.store, "orders") == (0..<15).map { String(format: "o%04d", $0) })
        #expect(try ids(b.store, "cars") == ["c1"])
        #expect(try ids(b.store, "trucks") == [])
        // o0005…o0009 match both queries: each was sent once.
        #expect(await connection.left.statistics.documentsSent == 16)
        a.engine.stop(); b.engine.stop()
    }

    @Test("cancelling a subscription stops its updates and keeps the documents it brought")
    func cancelStops() async throws {
        let a = try Peer("a"), b = try Peer("b")
        try a.store.insertOrders(0..<5)
        let orders = try b.subscribe("SELECT * FROM orders")
        _ = try b.subscribe("SELECT * FROM cars")
        let connection = connect(a, b)
        #expect(await connection.caughtUp())
        #expect(try ids(b.store, "orders").count == 5)
        orders.cancel()
        #expect(orders.isCancelled)
        #expect(b.engine.subscriptions.map(\.text) == ["SELECT * FROM cars"])
        // Wait until a has heard of the cancel: then changes to orders no longer go to b, while
        // cars (still subscribed) do.
        #expect(try await eventually { try connection.rightChannel.sentMessages().contains { if case .unsubscribe = $0 { return true } else { return false } } })
        try await Task.sleep(for: .milliseconds(50))
        try a.store.collection("orders").findByID("o0000").update { $0["status"].set("FILLED") }
        try a.store.insertOrders(5..<8)
        try a.store.collection("cars").upsert(["_id": "c1", "make": "fiat"])
        #expect(try await eventually { try ids(b.store, "cars") == ["c1"] })
        try await Task.sleep(for: .milliseconds(100))
        #expect(try ids(b.store, "orders").count == 5)
        #expect(try b.store.collection("orders").findByID("o0000").exec()?[path: ["status"]] == .string("OPEN"))
        a.engine.stop(); b.engine.stop()
    }
}
