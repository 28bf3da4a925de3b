import ArcusCodec
import ArcusMesh
import ArcusSync
import Synchronization

/// The codec contexts the last sync session with each peer ended with, so that a session on a
/// resumed link goes on from them (`CodecContinuation`) instead of interning every site, name and
/// string anew. The resumption hints carry each side's digests of what it holds (its encoder's
/// context for the peer, its decoder's for the peer's frames); a direction goes on only when the
/// sender's encoder digest equals the receiver's decoder digest, which both ends see alike. What a
/// side advertised is pinned to that link (`SecureConnector.SecuredLink`), so a session that ends
/// meanwhile cannot change it under the peer's feet.
public final class SyncCodecMemory: Sendable {
    /// Contexts that interned more than this are dropped rather than kept: memory per peer stays small.
    public static let maximumInternedBytes = 256 << 10
    /// Peers whose contexts are kept; past it, the oldest go.
    public static let maximumPeers = 1024

    private struct Store {
        var saved: [PeerID: CodecContinuation] = [:]
        var order: [PeerID] = []
    }

    private let store = Mutex(Store())

    public init() {}

    /// What the last session with `peer` left, if it was kept.
    public func continuation(for peer: PeerID) -> CodecContinuation? { store.withLock { $0.saved[peer] } }

    /// Keeps what a session with `peer` ended with, replacing what was kept; a context grown too
    /// large is not kept.
    func save(_ continuation: CodecContinuation, for peer: PeerID) {
        var kept = continuation
        if let encoding = kept.encoding, encoding.internedBytes > Self.maximumInternedBytes { kept.encoding = nil }
        if let decoding = kept.decoding, decoding.internedBytes > Self.maximumInternedBytes { kept.decoding = nil }
        store.withLock { store in
            store.order.removeAll { $0 == peer }
            while store.order.count >= Self.maximumPeers { store.saved[store.order.removeFirst()] = nil }
            store.saved[peer] = kept
            store.order.append(peer)
        }
    }

    /// The codec tags of a hint for `peer`: the digest of the encoder's context held, then of the
    /// decoder's (zeros: none); and those contexts, which the link must go on from if agreed.
    func advertise(for peer: PeerID) -> (tags: SyncResumptionHint.Tags, pinned: CodecContinuation) {
        let held = continuation(for: peer) ?? CodecContinuation()
        return (SyncResumptionHint.Tags(outgoing: Self.bytes(held.encoding?.digest), incoming: Self.bytes(held.decoding?.digest)), held)
    }

    /// Which of `pinned` this side goes on from, given both sides' codec tags.
    static func agreed(_ pinned: CodecContinuation, ours: SyncResumptionHint.Tags, theirs: SyncResumptionHint.Tags) -> CodecContinuation {
        let agreed = ours.agreement(with: theirs)
        return CodecContinuation(encoding: agreed.sending ? pinned.encoding : nil, decoding: agreed.receiving ? pinned.decoding : nil)
    }

    private static func bytes(_ digest: UInt32?) -> [UInt8] {
        guard let digest else { return SyncResumptionHint.none }
        return (0..<4).map { UInt8(truncatingIfNeeded: digest >> (8 * $0)) }
    }
}
