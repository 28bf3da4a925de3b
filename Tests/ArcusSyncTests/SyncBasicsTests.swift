import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import Foundation
import Testing

/// Waits until `condition` holds, checking every few milliseconds; false after `seconds`.
func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return try condition()
}

func ids(_ store: Store, _ collection: String) throws -> [String] {
    try store.execute("SELECT * FROM \(collection) ORDER BY _id").items.compactMap { $0[path: ["_id"]]?.stringValue }
}

@Suite("Sync between two stores")
struct SyncBasicsTests {
    @Test("a subscriber receives exactly what its query matches, then live changes and removals")
    func selective() async throws {
        let a = try Store(inMemory: Store.Options()), b = try Store(inMemory: Store.Options())
        for (id, status) in [("o1", "OPEN"), ("o2", "FILLED"), ("o3", "OPEN")] {
            try a.collection("orders").upsert(["_id": .string(id), "status": .string(status)])
        }
        try a.collection("cars").upsert(["_id": "c1", "make": "fiat"])
        let ea = try SyncEngine(store: a), eb = try SyncEngine(store: b)
        _ = try eb.registerSubscription("SELECT * FROM orders WHERE status != 'FILLED'")
        let (ca, cb) = TestChannel.pair()
        ea.connect(ca)
        let session = eb.connect(cb)
        #expect(await session.waitUntilCaughtUp())
        #expect(try ids(b, "orders") == ["o1", "o3"])
        #expect(try ids(b, "cars") == [])
        try a.collection("orders").upsert(["_id": "o4", "status": "OPEN"])
        #expect(try await eventually { try ids(b, "orders") == ["o1", "o3", "o4"] })
        try a.collection("orders").findByID("o1").remove()
        #expect(try await eventually { try ids(b, "orders") == ["o3", "o4"] })
        ea.stop(); eb.stop()
    }
}
