import ArcusCRDT
import ArcusCodec
import ArcusMesh
import ArcusSync
import Synchronization

/// A `SyncChannel` to a peer the mesh handshake authenticated: it reads the peer's first frame
/// (its sync hello) before the sync engine does, and closes the channel without handing it on
/// unless the hello's peer id is the site the authenticated peer's key names (`SiteID(peer:)`):
/// a peer writes under its own site and no other. The engine sends nothing but its own hello
/// before it has the peer's, so a refused peer gets nothing of the store. Frames are passed on
/// as the engine takes them, so the channel's backpressure is kept.
///
/// On a resumed link, a hello the other side already holds is not sent, and the one held stands
/// in for it (`SyncHelloMemory`, `HelloElision`).
///
/// The channel below is sealed with an AEAD, whose tag already proves every frame intact, so each
/// frame's CRC-32C (its last 4 bytes) is left off on the way out and recomputed on the way in:
/// the engine still sends and receives whole codec frames.
public final class AuthenticatedSyncChannel: SyncChannel {
    public let channel: any SyncChannel
    public let peer: AuthenticatedPeer
    public let incoming: AsyncStream<[UInt8]>
    private let gate: HelloGate
    private let counts = Mutex((frames: 0, bytes: 0))
    /// The checksum of this side's hello if the peer holds it, until the hello has gone by.
    private let ownHelloHeldByPeer: Mutex<[UInt8]?>

    /// `resumption` holds the hints of a resumed link (`SecureLink.resumption`).
    public init(
        _ channel: any SyncChannel, peer: AuthenticatedPeer, hellos: SyncHelloMemory = SyncHelloMemory(),
        resumption: ResumptionHints? = nil
    ) {
        self.channel = channel
        self.peer = peer
        let elision = HelloElision(resumption)
        ownHelloHeldByPeer = Mutex(elision.ownHelloHeldByPeer)
        let gate = HelloGate(channel: channel, peer: peer, hellos: hellos, standIn: elision.peerHelloHeldHere)
        self.gate = gate
        incoming = AsyncStream(unfolding: { await gate.next() })
    }

    /// Why the peer's session was refused, if it was.
    public var refusalReason: String? { gate.refusal }

    public func send(_ frame: [UInt8]) async throws {
        // The engine's first frame is its hello.
        let held = ownHelloHeldByPeer.withLock { held in defer { held = nil }; return held }
        if held != SyncHelloMemory.checksum(frame) {
            try await channel.send(Array(frame.dropLast(FrameChecksum.size)))
        }
        counts.withLock { $0.frames += 1; $0.bytes += frame.count }
    }

    /// Sync frames this side's engine sent and their bytes as the codec made them (with their
    /// CRCs, and counting a hello left out), for comparing with an unsealed channel.
    public var framesSent: (frames: Int, bytes: Int) { counts.withLock { $0 } }

    public var preferredFrameSize: Int { channel.preferredFrameSize }
    public func close() { channel.close() }
    public func flush(until deadline: ContinuousClock.Instant) async -> Bool { await channel.flush(until: deadline) }
}

/// Checks the first frame, then passes the rest through. Only `incoming`'s unfolding calls
/// `next`, and an `AsyncStream` runs it for one consumer at a time, so the iterator is never
/// touched concurrently; `refusal` is read from anywhere, hence the lock.
private final class HelloGate: @unchecked Sendable {
    private var frames: AsyncStream<[UInt8]>.Iterator
    private var checked = false
    private let channel: any SyncChannel
    private let peer: AuthenticatedPeer
    private let hellos: SyncHelloMemory
    /// The checksum of the held hello that stands in for the peer's, which it leaves out.
    private let standIn: [UInt8]?
    private let refused = Mutex<String?>(nil)

    init(channel: any SyncChannel, peer: AuthenticatedPeer, hellos: SyncHelloMemory, standIn: [UInt8]?) {
        frames = channel.incoming.makeAsyncIterator()
        self.channel = channel
        self.peer = peer
        self.hellos = hellos
        self.standIn = standIn
    }

    var refusal: String? { refused.withLock { $0 } }

    func next() async -> [UInt8]? {
        guard refusal == nil else { return nil }
        if checked {
            guard let sealed = await frames.next() else { return nil }
            return FrameChecksum.appended(to: sealed)
        }
        checked = true
        let frame: [UInt8]
        if let standIn {
            // The peer leaves its hello out: the one held here, which it named, stands in.
            guard let held = hellos.hello(of: peer.peerID), SyncHelloMemory.checksum(held) == standIn else {
                return refuse("the sync hello \(peer) left out on a resumed link is no longer held here; reconnect")
            }
            frame = held
        } else {
            guard let sealed = await frames.next() else { return nil }
            frame = FrameChecksum.appended(to: sealed)
        }
        let reason: String?
        do {
            var decoder = FrameDecoder()
            if case .hello(let hello)? = try decoder.decode(frame) {
                let site = SiteID(peer: peer.peerID)
                if SiteID(peerID: hello.peerID) == site {
                    reason = nil
                    hellos.remember(frame, of: peer.peerID)
                } else {
                    reason = "\(peer) sent a sync hello as \(Hex.encode(hello.peerID)), but its key names site \(site)"
                }
            } else {
                reason = "\(peer) did not start with a sync hello"
            }
        } catch {
            reason = "\(peer) sent a malformed first frame: \(error)"
        }
        guard let reason else { return frame }
        return refuse(reason)
    }

    private func refuse(_ reason: String) -> [UInt8]? {
        refused.withLock { $0 = reason }
        channel.close()
        return nil
    }
}

/// The CRC-32C that ends every codec frame, which a sealed channel leaves off the wire.
enum FrameChecksum {
    static let size = 4

    /// `frame` with its CRC-32C appended, little-endian, as `FrameEncoder` writes it.
    static func appended(to frame: [UInt8]) -> [UInt8] {
        let crc = CRC32C.checksum(frame)
        return frame + (0..<4).map { UInt8(truncatingIfNeeded: crc >> (8 * $0)) }
    }
}
