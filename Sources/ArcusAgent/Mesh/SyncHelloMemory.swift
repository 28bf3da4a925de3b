import ArcusCodec
import ArcusMesh
import Synchronization

/// The sync hello each authenticated peer last sent this agent, so that on a resumed link
/// neither side need send its hello again. The resumption hints (`MeshHandshake`) carry, from
/// each side, the checksum of the peer's hello it holds and of its own hello now — a hello
/// frame's CRC-32C, its last 4 bytes — so both sides know, before the session starts, which
/// hellos are left out and stand in for them: 36 bytes and two sealed records a session, on the
/// many short sessions of devices that meet again and again.
public final class SyncHelloMemory: Sendable {
    private let hellos = Mutex<[PeerID: [UInt8]]>([:])

    public init() {}

    /// The hello frame `peer` last sent, whole, if any.
    public func hello(of peer: PeerID) -> [UInt8]? { hellos.withLock { $0[peer] } }

    func remember(_ frame: [UInt8], of peer: PeerID) {
        hellos.withLock { $0[peer] = frame }
    }

    /// The hint for a link resumed with `peer`, by a side whose hello is `ownHello`: the checksum
    /// of the peer's hello held here (zeros: none), then of `ownHello`.
    func hint(for peer: PeerID, ownHello: [UInt8]) -> [UInt8] {
        (hello(of: peer).map(Self.checksum) ?? Self.none) + Self.checksum(ownHello)
    }

    static func checksum(_ frame: [UInt8]) -> [UInt8] { Array(frame.suffix(FrameChecksum.size)) }
    static let none = [UInt8](repeating: 0, count: FrameChecksum.size)
}

/// Which hellos a resumed link leaves out, as both ends work it out from the hints.
struct HelloElision: Sendable {
    /// The checksum of this side's hello when the peer holds it: the hello is not sent.
    var ownHelloHeldByPeer: [UInt8]?
    /// The checksum of the peer's hello, held here, that the peer will not send.
    var peerHelloHeldHere: [UInt8]?

    static let none = HelloElision()

    init() {}

    init(_ hints: ResumptionHints?) {
        let size = FrameChecksum.size
        // The hello part is the hints' first 8 bytes.
        guard let hints, hints.sent.count >= 2 * size, hints.received.count >= 2 * size else { return }
        let (heldHere, ownHere) = (Array(hints.sent.prefix(size)), Array(hints.sent[size..<2 * size]))
        let (heldThere, ownThere) = (Array(hints.received.prefix(size)), Array(hints.received[size..<2 * size]))
        if heldThere != SyncHelloMemory.none, heldThere == ownHere { ownHelloHeldByPeer = ownHere }
        if heldHere != SyncHelloMemory.none, heldHere == ownThere { peerHelloHeldHere = heldHere }
    }
}
