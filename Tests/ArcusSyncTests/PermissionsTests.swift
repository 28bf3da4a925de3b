import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Testing

/// What a peer may read and write (its certificate's permissions, as `SyncPermissions`): it is
/// never sent what it may not read, and its own writes it may not make are refused and logged.
@Suite("Permissions")
struct PermissionsTests {
    static let ordersOnly = SyncPermissions(read: .named(["orders"]))

    /// The delta batches one side sent.
    static func batches(_ channel: TestChannel) throws -> [DeltaBatch] {
        try channel.sentMessages().compactMap { message in
            if case .deltaBatch(let batch) = message { return batch }
            return nil
        }
    }

    /// The errors one side sent.
    static func errors(_ channel: TestChannel) throws -> [SyncError] {
        try channel.sentMessages().compactMap { message in
            if case .error(let error) = message { return error }
            return nil
        }
    }

    @Test("a peer that may read only orders, subscribed to everything, gets orders and nothing of secret, and no vouch")
    func readOnlyOrders() async throws {
        let a = try Peer("a"), b = try Peer("b")
        try a.store.insertOrders(0..<5)
        try a.store.insertOrders(0..<3, collection: "secret")
        _ = try b.subscribe("")
        var ab = connect(a, b, permissions: (Self.ordersOnly, .all))
        #expect(await ab.caughtUp())
        #expect(try ids(b.store, "orders").count == 5)
        #expect(try ids(b.store, "secret").isEmpty)
        let sent = try Self.batches(ab.leftChannel)
        #expect(sent.flatMap(\.documents).allSatisfy { $0.key.collection == "orders" })
        #expect(sent.allSatisfy { $0.covers == nil }, "a vouch for the whole store would name the secret documents' events")
        // Live changes and removals of secret never arrive; those of orders do.
        try a.store.collection("secret").findByID("o0001").remove()
        try a.store.insertOrders(3..<4, collection: "secret")
        try a.store.collection("orders").findByID("o0001").remove()
        #expect(try await eventually { try ids(b.store, "orders").count == 4 })
        try await Task.sleep(for: .milliseconds(100))
        #expect(try Self.batches(ab.leftChannel).flatMap(\.documents).allSatisfy { $0.key.collection == "orders" })
        #expect(try ids(b.store, "secret").isEmpty)
        // Allowed to read everything later, b gets what was withheld (nothing claimed it had it).
        ab.close()
        await ab.ended()
        ab = connect(a, b)
        #expect(await ab.caughtUp())
        #expect(try await eventually { try ids(b.store, "secret") == ["o0000", "o0002", "o0003"] })
        #expect(try contents(b.store, "orders") == contents(a.store, "orders"))
        a.engine.stop(); b.engine.stop()
    }

    @Test("a subscription to a collection the peer may not read is refused with an error, and gets nothing")
    func unreadableSubscription() async throws {
        let a = try Peer("a"), b = try Peer("b")
        try a.store.insertOrders(0..<3, collection: "secret")
        try a.store.insertOrders(0..<3)
        _ = try b.subscribe("SELECT * FROM secret")
        _ = try b.subscribe("SELECT * FROM orders")
        let ab = connect(a, b, permissions: (Self.ordersOnly, .all))
        // The refusal answers the subscription: b does not wait for it for ever.
        #expect(await ab.caughtUp())
        try await Task.sleep(for: .milliseconds(50))
        #expect(try ids(b.store, "secret").isEmpty)
        #expect(try ids(b.store, "orders").count == 3)
        let refusals = try Self.errors(ab.leftChannel).filter { $0.code == 7 }
        #expect(!refusals.isEmpty && refusals.allSatisfy { $0.message.contains("may not read collection secret") })
        #expect(try Self.batches(ab.leftChannel).flatMap(\.documents).allSatisfy { $0.key.collection == "orders" })
        #expect(a.log.contains(.warning, "may not read secret"))
        #expect(b.log.contains(.warning, "refused subscription SELECT * FROM secret"))
        #expect(await ab.left.endReason == nil, "a refusal does not end the session")
        #expect(await ab.right.endReason == nil)
        a.engine.stop(); b.engine.stop()
    }

    @Test("a subscription served before is refused once the peer may no longer read its collection")
    func narrowedBetweenSessions() async throws {
        let a = try Peer("a"), b = try Peer("b")
        try a.store.insertOrders(0..<2, collection: "secret")
        _ = try b.subscribe("SELECT * FROM secret")
        var ab = connect(a, b)
        #expect(await ab.caughtUp())
        #expect(try ids(b.store, "secret").count == 2)
        ab.close()
        await ab.ended()
        try a.store.insertOrders(2..<4, collection: "secret")
        // b says only a digest now (no subscribe): a still knows the query from its record.
        ab = connect(a, b, permissions: (Self.ordersOnly, .all))
        #expect(await ab.caughtUp())
        try await Task.sleep(for: .milliseconds(50))
        #expect(try ids(b.store, "secret").count == 2)
        #expect(try Self.errors(ab.leftChannel).contains { $0.code == 7 })
        #expect(a.log.contains(.warning, "may not read secret"))
        a.engine.stop(); b.engine.stop()
    }

    @Test("a peer's own writes to a collection it may not write are refused, logged and counted; the rest merge")
    func forbiddenWritesRefused() async throws {
        let a = try Peer("a"), b = try Peer("b")
        try a.store.collection("prices").upsert(["_id": "p0", "price": 10])
        _ = try a.subscribe("")
        _ = try b.subscribe("")
        let ab = connect(a, b, permissions: (SyncPermissions(write: .named(["orders"])), .all))
        #expect(await ab.caughtUp())
        #expect(try ids(b.store, "prices") == ["p0"])
        try b.store.insertOrders(0..<3)
        try b.store.collection("prices").upsert(["_id": "p1", "price": 11])
        try b.store.collection("prices").findByID("p0").update { $0["price"].set(99) }
        #expect(try await eventually { try ids(a.store, "orders").count == 3 })
        try await Task.sleep(for: .milliseconds(100))
        #expect(try ids(a.store, "prices") == ["p0"])
        #expect(try a.store.collection("prices").findByID("p0").exec()?[path: ["price"]] == 10)
        #expect(await ab.left.statistics.documentsRefused == 2)
        #expect(a.log.contains(.warning, "may not write prices"))
        #expect(a.log.all.contains { $0.0 == .warning && $0.1.contains("p1") })
        #expect(await ab.left.endReason == nil, "a refused write is a warning, not the end of the session")
        a.engine.stop(); b.engine.stop()
        #expect(await eventually { a.engine.statistics.documentsRefused == 2 }, "the engine's totals take in ended sessions")
    }

    @Test("in a chain A—B—C, B relays A's prices to C though C lets B write only orders; B's own prices are refused")
    func relayWithoutWritePermission() async throws {
        let a = try Peer("a"), b = try Peer("b"), c = try Peer("c")
        for peer in [a, b, c] { _ = try peer.subscribe("SELECT * FROM prices") }
        let ab = connect(a, b)
        let bc = connect(b, c, permissions: (.all, SyncPermissions(write: .named(["orders"]))))
        #expect(await ab.caughtUp())
        #expect(await bc.caughtUp())
        try a.store.collection("prices").upsert(["_id": "p0", "price": 10])
        try b.store.collection("prices").upsert(["_id": "p1", "price": 11])
        #expect(try await eventually { try ids(c.store, "prices") == ["p0"] })
        #expect(try await eventually { try ids(a.store, "prices") == ["p0", "p1"] }, "a lets b write prices")
        try a.store.collection("prices").findByID("p0").update { $0["price"].set(12) }
        #expect(try await eventually { try c.store.collection("prices").findByID("p0").exec()?[path: ["price"]] == 12 })
        try await Task.sleep(for: .milliseconds(100))
        #expect(try ids(c.store, "prices") == ["p0"])
        #expect(await bc.right.statistics.documentsRefused == 1)
        #expect(c.log.contains(.warning, "may not write prices"))
        for peer in [a, b, c] { peer.engine.stop() }
    }

    @Test("an attachment is served only when a document the peer may read references it")
    func attachmentsOfUnreadableDocuments() async throws {
        let a = try Peer("a"), b = try Peer("b")
        let secretToken = try AttachmentFetchTests.attach(AttachmentFetchTests.blob(2_000, seed: 3), on: a, id: "hidden")
        let orderBytes = AttachmentFetchTests.blob(2_000, seed: 5)
        let orderToken = try a.store.newAttachment(orderBytes, metadata: [:])
        try a.store.collection("orders").findByID("o1").update { $0["receipt"].set(orderToken) }
        _ = try b.subscribe("")
        let ab = connect(a, b, permissions: (Self.ordersOnly, .all))
        #expect(await ab.caughtUp())
        #expect(try await b.engine.fetchAttachment(orderToken) == orderBytes)
        // The photo's document is in `photos`, which b may not read: a answers "not found".
        let fetch = Task { try await b.engine.fetchAttachment(secretToken) }
        #expect(try await eventually { a.log.contains(.warning, "no document it may read references") })
        fetch.cancel()
        _ = try? await fetch.value
        #expect(!b.store.hasAttachment(secretToken))
        let chunks = try ab.leftChannel.sentMessages().compactMap { message -> AttachmentChunk? in
            if case .attachmentChunk(let chunk) = message { return chunk }
            return nil
        }
        #expect(!chunks.isEmpty && chunks.allSatisfy { $0.hash == orderToken.hash })
        a.engine.stop(); b.engine.stop()
    }

    @Test("permissions translate from certificate lists: '*' means every collection")
    func namesWithStar() {
        #expect(SyncPermissions.Collections(["*"]) == .all)
        #expect(SyncPermissions.Collections(["orders", "*"]) == .all)
        #expect(SyncPermissions.Collections(["orders"]).contains("orders"))
        #expect(!SyncPermissions.Collections(["orders"]).contains("secret"))
        #expect(!SyncPermissions.Collections([String]()).contains("orders"))
        #expect(SyncPermissions.all == SyncPermissions(read: .all, write: .all))
    }
}
