import Crypto
import Foundation

/// The key that admits peers to a mesh by signing their certificates (`arcus mesh init` makes
/// one; `arcus mesh issue` uses it). Only its public key goes to the peers; the private key stays
/// with whoever runs the mesh, ideally offline.
public struct MeshAuthority: Sendable {
    /// The Ed25519 seed, as bytes because swift-crypto's key types are not `Sendable`.
    private let seed: [UInt8]
    public let publicKey: AuthorityPublicKey

    /// A new random authority.
    public init() {
        self.init(signingKey: Curve25519.Signing.PrivateKey())
    }

    public init(signingKey: Curve25519.Signing.PrivateKey) {
        seed = Array(signingKey.rawRepresentation)
        publicKey = AuthorityPublicKey(signingKey.publicKey)
    }

    var signingKey: Curve25519.Signing.PrivateKey {
        // The seed came from a valid key.
        try! Curve25519.Signing.PrivateKey(rawRepresentation: seed)
    }

    /// Signs a certificate admitting `publicKey` as `name` with `permissions`, valid until
    /// `expiresAt` (to the second) or forever. Throws `CertificateError.invalidField` when a field
    /// is over its limit (see `PeerCertificate.Limits`).
    public func issue(
        to publicKey: PeerPublicKey, name: String, permissions: CollectionPermissions, expiresAt: Date? = nil
    ) throws(CertificateError) -> PeerCertificate {
        try PeerCertificate(publicKey: publicKey, name: name, permissions: permissions, expiresAt: expiresAt, signedBy: signingKey)
    }

    // MARK: Serialisation

    static let encoding = SigningKeyEncoding(magic: "arcus-authority-1")

    /// The private key as bytes: a magic string, then the 32-byte Ed25519 seed. Secret.
    public var serialized: [UInt8] { Self.encoding.encode(seed: seed) }

    /// Reads bytes `serialized` wrote; throws `CertificateError.malformed` for anything else.
    public init(serialized bytes: some Collection<UInt8>) throws(CertificateError) {
        guard let key = Self.encoding.decode(bytes) else {
            throw .malformed("not an Arcus mesh authority key (\(bytes.count) bytes; expected \(Self.encoding.expectation))")
        }
        self.init(signingKey: key)
    }
}
