import ArcusSync
import Synchronization

/// A pair of connected in-memory channels for protocol tests: instant, unlimited, ordered.
/// `cut()` ends both sides at once, as a dying link would.
final class TestChannel: SyncChannel {
    let incoming: AsyncStream<[UInt8]>
    private let input: AsyncStream<[UInt8]>.Continuation
    private let peer = Mutex<TestChannel?>(nil)
    private let closed = Mutex(false)
    let preferredFrameSize: Int
    /// Frames this side sent.
    let sent = Mutex<[[UInt8]]>([])

    private init(preferredFrameSize: Int) {
        (incoming, input) = AsyncStream.makeStream()
        self.preferredFrameSize = preferredFrameSize
    }

    static func pair(preferredFrameSize: Int = 4096) -> (TestChannel, TestChannel) {
        let a = TestChannel(preferredFrameSize: preferredFrameSize), b = TestChannel(preferredFrameSize: preferredFrameSize)
        a.peer.withLock { $0 = b }
        b.peer.withLock { $0 = a }
        return (a, b)
    }

    func send(_ frame: [UInt8]) async throws {
        guard !closed.withLock({ $0 }), let peer = peer.withLock({ $0 }) else { throw ChannelClosed() }
        sent.withLock { $0.append(frame) }
        peer.input.yield(frame)
    }

    /// Delivers raw bytes to this side as if the peer had sent them.
    func inject(_ frame: [UInt8]) { input.yield(frame) }

    func close() {
        let peer = self.peer.withLock { peer -> TestChannel? in
            defer { peer = nil }
            return peer
        }
        closed.withLock { $0 = true }
        input.finish()
        peer?.close()
    }

    struct ChannelClosed: Error {}
}
