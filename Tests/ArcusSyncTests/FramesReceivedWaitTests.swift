import ArcusSync
import Synchronization
import Testing

/// `SyncSession.waitUntilReceived(frames:)`: what a one-off sync waits on before closing the
/// link, so that the puller's last acknowledgement reaches the server (`arcus bench trace`).
@Suite("Waiting for frames received")
struct FramesReceivedWaitTests {
    @Test("the server's wait ends once it has taken every frame the puller sent, and at the latest when the session ends")
    func waitsForThePullersFrames() async throws {
        let server = try Peer("server"), puller = try Peer("puller")
        try server.store.insertOrders(0..<30)
        _ = try puller.subscribe("SELECT * FROM orders")
        let connection = connect(server, puller, pulling: (false, true))
        #expect(await connection.right.waitUntilCaughtUp())
        await connection.right.waitUntilIdle()
        let sent = await connection.right.statistics.framesSent
        #expect(sent >= 3, "hello, subscribe and summary at least")

        await connection.left.waitUntilReceived(frames: sent)
        #expect(await connection.left.statistics.framesReceived >= sent)

        // Idle, the puller still sends the acknowledgement it holds for `acknowledgementDelay`
        // (25 ms) to coalesce, once that has passed: a test that closed later than that, as on
        // a loaded machine, found one frame more than `sent` (CI, 2026-12-01).
        try await Task.sleep(for: .milliseconds(200))

        // A count the puller never sends: the wait ends with the session, not never.
        let waiting = Task { await connection.left.waitUntilReceived(frames: .max) }
        connection.close()
        await waiting.value
        #expect(await connection.left.endReason != nil, "the wait ended before the session did")
        await connection.ended()
        // Not `== sent`: the acknowledgement sent after going idle came too, most likely.
        #expect(await connection.left.statistics.framesReceived >= sent)
        #expect(try ids(puller.store, "orders").count == 30)
        server.engine.stop(); puller.engine.stop()
    }

    @Test("the wait lasts while the puller's frames are held back, and ends when they arrive")
    func waitsWhileFramesAreHeld() async throws {
        let server = try Peer("server"), puller = try Peer("puller")
        try server.store.insertOrders(0..<5)
        _ = try puller.subscribe("SELECT * FROM orders")
        let (serverChannel, pullerChannel) = TestChannel.pair()
        pullerChannel.hold()
        let serving = server.engine.connect(serverChannel, pulling: false)
        let pulling = puller.engine.connect(pullerChannel)
        let returned = Mutex(false)
        let waiting = Task {
            await serving.waitUntilReceived(frames: 2)
            returned.withLock { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(!returned.withLock { $0 }, "no frame of the puller's has arrived yet")
        #expect(await serving.statistics.framesReceived == 0)
        pullerChannel.release(1)
        try await Task.sleep(for: .milliseconds(200))
        #expect(!returned.withLock { $0 }, "one frame of two has arrived")
        pullerChannel.releaseAll()
        await waiting.value
        #expect(await serving.statistics.framesReceived >= 2)
        #expect(await pulling.waitUntilCaughtUp())
        serverChannel.close()
        await serving.waitUntilEnded(); await pulling.waitUntilEnded()
        server.engine.stop(); puller.engine.stop()
    }
}
