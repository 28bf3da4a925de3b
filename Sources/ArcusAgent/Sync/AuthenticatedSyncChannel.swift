import ArcusCodec
import ArcusMesh
import ArcusSync
import Synchronization

/// A `SyncChannel` to a peer the mesh handshake authenticated: it reads the peer's first frame
/// (its sync hello) before the sync engine does, and closes the channel without handing it on
/// unless the hello's peer id is the one `bindings` hold for the authenticated peer (or binds
/// it, the first time; see `SyncPeerBindings`). The engine sends nothing but its own hello
/// before it has the peer's, so a refused peer gets nothing of the store. Frames are passed on
/// as the engine takes them, so the channel's backpressure is kept.
public final class AuthenticatedSyncChannel: SyncChannel {
    public let channel: any SyncChannel
    public let peer: AuthenticatedPeer
    public let incoming: AsyncStream<[UInt8]>
    private let gate: HelloGate

    public init(_ channel: any SyncChannel, peer: AuthenticatedPeer, bindings: SyncPeerBindings) {
        self.channel = channel
        self.peer = peer
        let gate = HelloGate(channel: channel, peer: peer, bindings: bindings)
        self.gate = gate
        incoming = AsyncStream(unfolding: { await gate.next() })
    }

    /// Why the peer's session was refused, if it was.
    public var refusalReason: String? { gate.refusal }

    public func send(_ frame: [UInt8]) async throws { try await channel.send(frame) }
    public var preferredFrameSize: Int { channel.preferredFrameSize }
    public func close() { channel.close() }
}

/// Checks the first frame, then passes the rest through. Only `incoming`'s unfolding calls
/// `next`, and an `AsyncStream` runs it for one consumer at a time, so the iterator is never
/// touched concurrently; `refusal` is read from anywhere, hence the lock.
private final class HelloGate: @unchecked Sendable {
    private var frames: AsyncStream<[UInt8]>.Iterator
    private var checked = false
    private let channel: any SyncChannel
    private let peer: AuthenticatedPeer
    private let bindings: SyncPeerBindings
    private let refused = Mutex<String?>(nil)

    init(channel: any SyncChannel, peer: AuthenticatedPeer, bindings: SyncPeerBindings) {
        frames = channel.incoming.makeAsyncIterator()
        self.channel = channel
        self.peer = peer
        self.bindings = bindings
    }

    var refusal: String? { refused.withLock { $0 } }

    func next() async -> [UInt8]? {
        guard refusal == nil, let frame = await frames.next() else { return nil }
        if checked { return frame }
        checked = true
        let reason: String?
        do {
            var decoder = FrameDecoder()
            if case .hello(let hello)? = try decoder.decode(frame) {
                reason = bindings.bind(hello.peerID, to: peer.peerID)
            } else {
                reason = "\(peer) did not start with a sync hello"
            }
        } catch {
            reason = "\(peer) sent a malformed first frame: \(error)"
        }
        guard let reason else { return frame }
        refused.withLock { $0 = reason }
        channel.close()
        return nil
    }
}
