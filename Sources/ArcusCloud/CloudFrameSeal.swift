import ArcusMesh
import Crypto
import Foundation

/// Authenticates the cloud frames between one run of this peer and one run of another: every
/// frame carries a 16-byte tag (HMAC-SHA256, truncated) under a key only the two peers can
/// compute, so that nobody else who can publish on their link subjects — the relay's operator,
/// another tenant, a stranger with the relay's password — can open, accept, close, credit or
/// feed their links.
///
/// The key is the two peers' own: X25519 between their identities' agreement keys (each peer
/// learns the other's from its signed announcement, or from its open frame, checked against
/// the peer id, which hashes it), through HKDF with the mesh and both ids. It needs no mesh
/// credential and gives no confidentiality (the Noise session over the link does both); other
/// members of the mesh cannot compute it either. Each tag also covers both peers' run
/// instances, so a frame recorded from one pair of runs means nothing to any other, and the
/// direction, so a frame cannot be reflected back to its sender.
///
/// Replays within one pair of runs are harmless by construction of the frames: opens are
/// numbered and taken once, data frames numbered (a repeat is dropped), credit cumulative (an
/// old grant grants nothing), closes final.
package struct CloudFrameSeal: Sendable {
    package static let tagSize = 16

    /// The pair's key (32 bytes), as derived by `pairKey`.
    private let key: [UInt8]
    private let sender: (peer: PeerID, instance: UInt64)
    private let receiver: (peer: PeerID, instance: UInt64)

    /// The seal of frames from `local`'s run `localInstance` to `remote`'s `remoteInstance`;
    /// `opening()` checks the other direction.
    package init(key: [UInt8], local: PeerID, localInstance: UInt64, remote: PeerID, remoteInstance: UInt64) {
        self.key = key
        sender = (local, localInstance)
        receiver = (remote, remoteInstance)
    }

    /// The seal for frames coming the other way.
    package var opening: CloudFrameSeal {
        CloudFrameSeal(key: key, local: receiver.peer, localInstance: receiver.instance, remote: sender.peer, remoteInstance: sender.instance)
    }

    /// The remote run this seal's frames go to.
    var remoteInstance: UInt64 { receiver.instance }

    /// `frame` encoded with its tag.
    package func seal(_ frame: CloudFrame) -> [UInt8] {
        let bytes = frame.encoded
        return bytes + tag(over: bytes[...])
    }

    /// Whether `frame` (as decoded, with its tag) was sealed by this seal's sender for its
    /// receiver. Constant time in the tag.
    package func verifies(_ frame: CloudFrame) -> Bool {
        let expected = tag(over: frame.authenticated)
        guard frame.tag.count == expected.count else { return false }
        return zip(expected, frame.tag).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    private func tag(over bytes: ArraySlice<UInt8>) -> [UInt8] {
        var mac = HMAC<SHA256>(key: SymmetricKey(data: key))
        mac.update(data: Self.label)
        mac.update(data: sender.peer.bytes)
        mac.update(data: sender.instance.bigEndianBytes)
        mac.update(data: receiver.peer.bytes)
        mac.update(data: receiver.instance.bigEndianBytes)
        mac.update(data: bytes)
        return Array(mac.finalize().prefix(Self.tagSize))
    }

    private static let label = Array("arcus cloud frame 2".utf8) + [0]

    /// The key `identity` and the peer holding `remote` share on the mesh whose subject token is
    /// `mesh`; nil when `remote`'s agreement key is unusable (a low-order point).
    package static func pairKey(_ identity: PeerIdentity, with remote: PeerPublicKey, mesh: String) -> [UInt8]? {
        guard let shared = try? identity.agreementKey.sharedSecretFromKeyAgreement(with: remote.agreementKey) else { return nil }
        let (low, high) = [identity.peerID, remote.peerID].sorted().pair
        let key = shared.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: Array("arcus cloud link key".utf8) + [0] + Array(mesh.utf8),
            sharedInfo: low.bytes + high.bytes, outputByteCount: 32
        )
        return key.withUnsafeBytes { Array($0) }
    }
}

extension Array where Element == PeerID {
    /// The first two ids, for a sorted pair.
    fileprivate var pair: (PeerID, PeerID) { (self[0], self[1]) }
}
