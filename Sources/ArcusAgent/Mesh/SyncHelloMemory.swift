import ArcusCodec
import ArcusMesh
import Synchronization

/// The sync hello each authenticated peer last sent this agent, so that on a resumed link
/// neither side need send its hello again. The resumption hints (`SyncResumptionHint`) carry,
/// from each side, the checksum of its own hello now and of the peer's hello it holds — a hello
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

    /// The hello tags for a link resumed with `peer`, by a side whose hello is `ownHello`: the
    /// checksum of `ownHello`, and of the peer's hello held here (zeros: none).
    func tags(for peer: PeerID, ownHello: [UInt8]) -> SyncResumptionHint.Tags {
        SyncResumptionHint.Tags(outgoing: Self.checksum(ownHello), incoming: hello(of: peer).map(Self.checksum) ?? SyncResumptionHint.none)
    }

    /// A hello frame's tag: its CRC-32C, the frame's last 4 bytes.
    static func checksum(_ frame: [UInt8]) -> [UInt8] { Array(frame.suffix(FrameChecksum.size)) }
}

/// Which hellos a resumed link leaves out, as both ends work it out from the hints.
struct HelloElision: Sendable {
    /// The checksum of this side's hello when the peer holds it: the hello is not sent.
    var ownHelloHeldByPeer: [UInt8]?
    /// The checksum of the peer's hello, held here, that the peer will not send.
    var peerHelloHeldHere: [UInt8]?

    init(_ resumption: ResumptionHints?) {
        guard let (ours, theirs) = SyncResumptionHint.of(resumption) else { return }
        let agreed = ours.hello.agreement(with: theirs.hello)
        if agreed.sending { ownHelloHeldByPeer = ours.hello.outgoing }
        if agreed.receiving { peerHelloHeldHere = ours.hello.incoming }
    }
}
