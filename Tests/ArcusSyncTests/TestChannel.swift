import ArcusCRDT
import ArcusCodec
import ArcusSync
import Synchronization

/// A pair of connected in-memory channels for protocol tests: ordered and instant unless told
/// otherwise. A test can make one side slow (`delay`), hold its sends until it releases them
/// (`hold()`, `release(_:)`), cut the pair after some frames (`cut(after:where:)`), and read every
/// frame each side sent. `close()` ends both sides at once, as a dying link would.
final class TestChannel: SyncChannel {
    let incoming: AsyncStream<[UInt8]>
    private let input: AsyncStream<[UInt8]>.Continuation
    private let peer = Mutex<TestChannel?>(nil)
    /// The other side, still known after a close (for decoding what was sent).
    private let counterpart = Mutex<@Sendable () -> TestChannel?>({ nil })
    private let closed = Mutex(false)
    let preferredFrameSize: Int
    /// Frames this side sent (delivered to the peer), in order.
    let sent = Mutex<[[UInt8]]>([])

    private struct Gate {
        var held = false
        var permits = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// Sends suspended right now, and the most ever suspended at once.
        var waiting = 0
        var mostWaiting = 0
    }

    private struct Cut {
        var remaining: Int
        let counts: @Sendable ([UInt8]) -> Bool
    }

    private let gate = Mutex(Gate())
    private let cutRule = Mutex<Cut?>(nil)
    /// Each send first waits this long (a slow link).
    let delay = Mutex<Duration?>(nil)

    private init(preferredFrameSize: Int) {
        (incoming, input) = AsyncStream.makeStream()
        self.preferredFrameSize = preferredFrameSize
    }

    static func pair(preferredFrameSize: Int = 4096) -> (TestChannel, TestChannel) {
        let a = TestChannel(preferredFrameSize: preferredFrameSize), b = TestChannel(preferredFrameSize: preferredFrameSize)
        a.peer.withLock { $0 = b }
        b.peer.withLock { $0 = a }
        a.counterpart.withLock { $0 = { [weak b] in b } }
        b.counterpart.withLock { $0 = { [weak a] in a } }
        return (a, b)
    }

    var isClosed: Bool { closed.withLock { $0 } }

    func send(_ frame: [UInt8]) async throws {
        guard !isClosed else { throw ChannelClosed() }
        if let delay = delay.withLock({ $0 }) { try? await Task.sleep(for: delay) }
        await passGate()
        guard !isClosed, let peer = peer.withLock({ $0 }) else { throw ChannelClosed() }
        sent.withLock { $0.append(frame) }
        peer.input.yield(frame)
        let cutNow = cutRule.withLock { rule -> Bool in
            guard var current = rule, current.counts(frame) else { return false }
            current.remaining -= 1
            rule = current.remaining > 0 ? current : nil
            return current.remaining <= 0
        }
        if cutNow { close() }
    }

    private func passGate() async {
        let mustWait = gate.withLock { gate -> Bool in
            guard gate.held else { return false }
            if gate.permits > 0 {
                gate.permits -= 1
                return false
            }
            gate.waiting += 1
            gate.mostWaiting = max(gate.mostWaiting, gate.waiting)
            return true
        }
        guard mustWait else { return }
        await withCheckedContinuation { continuation in
            let resumeNow = gate.withLock { gate -> Bool in
                // Released (or closed) between the check and here: go on.
                if !gate.held || gate.permits > 0 || isClosed {
                    if gate.held && gate.permits > 0 { gate.permits -= 1 }
                    gate.waiting -= 1
                    return true
                }
                gate.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// From now on each send suspends until `release` lets it through.
    func hold() { gate.withLock { $0.held = true } }

    /// Lets `frames` more sends through.
    func release(_ frames: Int = 1) {
        let woken = gate.withLock { gate -> [CheckedContinuation<Void, Never>] in
            gate.permits += frames
            let count = min(gate.permits, gate.waiters.count)
            gate.permits -= count
            gate.waiting -= count
            let woken = Array(gate.waiters.prefix(count))
            gate.waiters.removeFirst(count)
            return woken
        }
        for waiter in woken { waiter.resume() }
    }

    /// Stops holding: every waiting and later send goes through.
    func releaseAll() {
        let woken = gate.withLock { gate -> [CheckedContinuation<Void, Never>] in
            gate.held = false
            gate.permits = 0
            gate.waiting -= gate.waiters.count
            defer { gate.waiters.removeAll() }
            return gate.waiters
        }
        for waiter in woken { waiter.resume() }
    }

    /// Sends suspended at the gate now, and the most ever at once.
    var waitingSends: (now: Int, most: Int) { gate.withLock { ($0.waiting, $0.mostWaiting) } }

    /// Closes the pair once this side has sent `frames` more frames that `counts` accepts (the
    /// last of them is delivered).
    func cut(after frames: Int, where counts: @escaping @Sendable ([UInt8]) -> Bool = { _ in true }) {
        cutRule.withLock { $0 = Cut(remaining: frames, counts: counts) }
    }

    /// Delivers raw bytes to this side as if the peer had sent them.
    func inject(_ frame: [UInt8]) { input.yield(frame) }

    /// Sends raw bytes to the peer (for scripted peers), bypassing delay, gate and cut.
    func sendRaw(_ frame: [UInt8]) throws {
        guard !isClosed, let peer = peer.withLock({ $0 }) else { throw ChannelClosed() }
        sent.withLock { $0.append(frame) }
        peer.input.yield(frame)
    }

    func close() {
        let peer = self.peer.withLock { peer -> TestChannel? in
            defer { peer = nil }
            return peer
        }
        closed.withLock { $0 = true }
        input.finish()
        let woken = gate.withLock { gate -> [CheckedContinuation<Void, Never>] in
            gate.waiting -= gate.waiters.count
            defer { gate.waiters.removeAll() }
            return gate.waiters
        }
        for waiter in woken { waiter.resume() }
        peer?.close()
    }

    // MARK: - Reading what was sent

    /// The message type of each frame this side sent.
    var sentTypes: [MessageType?] { sent.withLock { $0.map(Self.type(of:)) } }

    static func type(of frame: [UInt8]) -> MessageType? { frame.first.flatMap { MessageType(rawValue: $0 & 0x0F) } }

    static func isType(_ type: MessageType) -> @Sendable ([UInt8]) -> Bool { { frame in Self.type(of: frame) == type } }

    /// The messages this side sent, decoded in order (one decoder: they share a session).
    func sentMessages() throws -> [SyncMessage] {
        // As a session decodes them: once the speaker's hello is in, the listener's site (from
        // its own hello) is interned too.
        let listener = try counterpart.withLock { $0 }()?.helloSite()
        var decoder = FrameDecoder()
        return try sent.withLock { frames in
            try frames.compactMap { frame in
                let message = try decoder.decode(frame)
                if case .hello? = message, let listener { decoder.context.intern(listener) }
                return message
            }
        }
    }

    /// The site this side's hello named, if it sent one.
    func helloSite() throws -> SiteID? {
        guard let first = sent.withLock({ $0.first }) else { return nil }
        var decoder = FrameDecoder()
        guard case .hello(let hello)? = try decoder.decode(first) else { return nil }
        return SiteID(peerID: hello.peerID)
    }

    struct ChannelClosed: Error {}
}
