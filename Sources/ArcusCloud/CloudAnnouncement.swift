import ArcusMesh
import Crypto
import Foundation

/// What a cloud transport publishes on its mesh's presence subject: that it is here (every
/// `CloudSettings.announceInterval`, and at once when it sees a peer it did not know) or that it
/// is leaving. Signed by the peer's identity key, so that whoever can publish on the subject
/// (the relay's operator, another tenant, anyone with the relay's password) cannot speak for
/// a peer. 157 bytes:
///
///     0…10    "ARCUS-NATS2"
///     11      kind: here 1, leaving 2
///     12…75   the peer's public key (PeerPublicKey); the peer id is its hash, so the key is
///             checkable by anyone and needs no certificate
///     76…83   instance: random for each run of the transport, so that a restarted peer's
///             links to its earlier run are known to be dead
///     84…91   time: the peer's wall clock in milliseconds since 1970, strictly increasing
///             within a run; a receiver takes only announcements later than the last it took
///             from that peer, so a recorded one replayed (an earlier run's "here", say) is
///             ignored
///     92      flags: bit 0 set when the peer reads its links through the mesh's stream
///             (store-and-forward)
///     93…156  Ed25519 signature, by the key at 12…75, over "arcus cloud announcement", 0, the
///             mesh's subject token, 0, and bytes 0…92: an announcement counts on one mesh's
///             subject only
///
/// Version 1 ("ARCUS-NATS1", 37 bytes, unsigned) is recognised only to say that a peer runs an
/// older Arcus (`isOlderVersion`).
package struct CloudAnnouncement: Sendable, Equatable {
    package enum Kind: UInt8, Sendable { case here = 1, leaving }

    private static let magic = Array("ARCUS-NATS2".utf8)
    private static let olderMagic = Array("ARCUS-NATS1".utf8)
    private static let signatureSize = 64
    static let signedSize = magic.count + 1 + PeerPublicKey.size + 8 + 8 + 1
    static let size = signedSize + signatureSize

    var kind: Kind
    var publicKey: PeerPublicKey
    var instance: UInt64
    /// Milliseconds since 1970 on the sender's clock; only their order matters.
    var time: UInt64
    var storesFrames: Bool
    /// The Ed25519 signature over `signedBytes(mesh:)`.
    var signature: [UInt8]

    var peer: PeerID { publicKey.peerID }

    /// An announcement by `identity`, signed for the mesh whose subject token is `mesh`.
    package init(_ kind: Kind, by identity: PeerIdentity, instance: UInt64, time: UInt64, storesFrames: Bool, mesh: String) {
        self.kind = kind
        self.publicKey = identity.publicKey
        self.instance = instance
        self.time = time
        self.storesFrames = storesFrames
        self.signature = []
        // Signing cannot fail for a key held in memory.
        signature = Array((try? identity.signingKey.signature(for: signedBytes(mesh: mesh))) ?? Data())
    }

    /// The bytes the signature covers, on the mesh whose subject token is `mesh`.
    func signedBytes(mesh: String) -> [UInt8] {
        Array("arcus cloud announcement".utf8) + [0] + Array(mesh.utf8) + [0] + body
    }

    private var body: [UInt8] {
        Self.magic + [kind.rawValue] + publicKey.bytes + instance.bigEndianBytes + time.bigEndianBytes + [storesFrames ? 1 : 0]
    }

    package var encoded: [UInt8] { body + signature }

    /// The announcement in `bytes`, or nil for anything that is not a well-formed one: a
    /// presence subject is open to everyone the relay lets publish there. Its signature is not
    /// checked here (`isSigned(on:)`), so that a caller can drop stale ones before paying for it.
    package init?(decoding bytes: [UInt8]) {
        guard bytes.count == Self.size, bytes.starts(with: Self.magic) else { return nil }
        var offset = Self.magic.count
        guard let kind = Kind(rawValue: bytes[offset]) else { return nil }
        offset += 1
        guard let publicKey = try? PeerPublicKey(bytes: bytes[offset..<offset + PeerPublicKey.size]) else { return nil }
        offset += PeerPublicKey.size
        let instance = UInt64(bigEndianBytes: bytes[offset..<offset + 8])
        offset += 8
        let time = UInt64(bigEndianBytes: bytes[offset..<offset + 8])
        offset += 8
        guard bytes[offset] & ~1 == 0 else { return nil }
        self.kind = kind
        self.publicKey = publicKey
        self.instance = instance
        self.time = time
        self.storesFrames = bytes[offset] & 1 == 1
        self.signature = Array(bytes[(offset + 1)...])
    }

    /// Whether the signature is the announced key's, over this announcement on `mesh`.
    package func isSigned(on mesh: String) -> Bool {
        publicKey.signingKey.isValidSignature(signature, for: signedBytes(mesh: mesh))
    }

    /// Whether `bytes` look like an announcement of the first, unsigned version: a peer that
    /// runs an Arcus older than this one, which this one ignores.
    static func isOlderVersion(_ bytes: [UInt8]) -> Bool {
        bytes.starts(with: olderMagic)
    }
}
