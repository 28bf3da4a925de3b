import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Testing

/// When two peers already have the same data, finding that out costs at most 32 bytes per
/// subscription: a digest of what the subscriber said before, and an empty complete answer.
@Suite("In-sync exchange")
struct InSyncExchangeTests {
    /// Bytes of every frame either side sent on the connection, hellos excepted.
    static func bytesBeyondHellos(_ connection: Connection) -> Int {
        [connection.leftChannel, connection.rightChannel].reduce(0) { total, channel in
            total + channel.sent.withLock { frames in
                frames.filter { TestChannel.type(of: $0) != .hello }.reduce(0) { $0 + $1.count }
            }
        }
    }

    @Test("a second session between stores in sync costs at most 32 bytes for one subscription")
    func oneSubscription() async throws {
        let a = try Peer("a"), b = try Peer("b")
        try a.store.insertOrders(0..<50)
        _ = try b.subscribe("SELECT * FROM orders WHERE status = 'OPEN'")
        let first = connect(a, b)
        #expect(await first.caughtUp())
        // Live changes in the first session, acknowledged before it ends.
        try a.store.insertOrders(50..<60)
        #expect(try await eventually { try ids(b.store, "orders").count == 60 })
        try await Task.sleep(for: .milliseconds(50))
        first.close()
        await first.ended()

        let second = connect(a, b)
        #expect(await second.caughtUp())
        try await Task.sleep(for: .milliseconds(100))
        let bytes = Self.bytesBeyondHellos(second)
        let exchanged = "\(try second.rightChannel.sentMessages()) / \(try second.leftChannel.sentMessages())"
        #expect(bytes <= 32, "the second session sent \(bytes) bytes beyond the hellos: \(exchanged)")
        #expect(await second.left.statistics.documentsSent == 0)
        a.engine.stop(); b.engine.stop()
    }

    @Test("peers that subscribe to each other's data pay at most 32 bytes per subscription once in sync")
    func mutual() async throws {
        let a = try Peer("a"), b = try Peer("b")
        try a.store.insertOrders(0..<30)
        try b.store.insertOrders(30..<60)
        _ = try a.subscribe("SELECT * FROM orders")
        _ = try b.subscribe("SELECT * FROM orders")
        let first = connect(a, b)
        #expect(await first.caughtUp())
        try a.store.insertOrders(60..<65)
        try b.store.insertOrders(65..<70)
        #expect(try await eventually { try ids(a.store, "orders").count == 70 && ids(b.store, "orders").count == 70 })
        try await Task.sleep(for: .milliseconds(50))
        first.close()
        await first.ended()

        let second = connect(a, b)
        #expect(await second.caughtUp())
        try await Task.sleep(for: .milliseconds(100))
        let bytes = Self.bytesBeyondHellos(second)
        let exchanged = "\(try second.rightChannel.sentMessages()) / \(try second.leftChannel.sentMessages())"
        #expect(bytes <= 64, "the second session sent \(bytes) bytes beyond the hellos: \(exchanged)")
        a.engine.stop(); b.engine.stop()
    }
}
