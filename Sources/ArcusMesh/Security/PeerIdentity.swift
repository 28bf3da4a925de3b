import Crypto

/// A peer's long-term key pair: an Ed25519 signing key, and the X25519 key-agreement key the
/// handshake uses, derived from the signing key's seed so that one 32-byte secret is all a peer
/// stores. Its `publicKey` names it in certificates, and its `peerID` in the mesh.
///
/// Keep it secret: `load(orCreateAt:)` stores it in a file only its owner can read.
public struct PeerIdentity: Sendable {
    /// The Ed25519 seed; the agreement key's seed follows from it. Held as bytes because
    /// swift-crypto's key types are not `Sendable`.
    private let seed: [UInt8]
    private let agreementSeed: [UInt8]
    public let publicKey: PeerPublicKey

    /// A new random identity.
    public init() {
        self.init(signingKey: Curve25519.Signing.PrivateKey())
    }

    /// The identity whose seed is `signingKey`'s; the agreement key follows from it.
    public init(signingKey: Curve25519.Signing.PrivateKey) {
        seed = Array(signingKey.rawRepresentation)
        // HKDF keeps the two keys independent: learning one reveals nothing of the other.
        agreementSeed = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: seed),
            info: Array("arcus peer identity: X25519 key agreement".utf8),
            outputByteCount: 32
        ).withUnsafeBytes { Array($0) }
        publicKey = PeerPublicKey(signingKey: signingKey.publicKey, agreementKey: Self.agreementKey(agreementSeed).publicKey)
    }

    public var signingKey: Curve25519.Signing.PrivateKey {
        // The seed came from a valid key.
        try! Curve25519.Signing.PrivateKey(rawRepresentation: seed)
    }

    public var agreementKey: Curve25519.KeyAgreement.PrivateKey { Self.agreementKey(agreementSeed) }

    public var peerID: PeerID { publicKey.peerID }

    private static func agreementKey(_ seed: [UInt8]) -> Curve25519.KeyAgreement.PrivateKey {
        // Any 32 bytes are an X25519 private key (they are clamped when used).
        try! Curve25519.KeyAgreement.PrivateKey(rawRepresentation: seed)
    }

    // MARK: Serialisation

    static let encoding = SigningKeyEncoding(magic: "arcus-identity-1")

    /// The identity as bytes: a magic string, then the 32-byte signing seed. Secret.
    public var serialized: [UInt8] { Self.encoding.encode(seed: seed) }

    /// Reads bytes `serialized` wrote.
    public init(serialized bytes: some Collection<UInt8>) throws(IdentityError) {
        guard let key = Self.encoding.decode(bytes) else {
            throw .malformedIdentity("expected \(Self.encoding.expectation), got \(bytes.count) bytes")
        }
        self.init(signingKey: key)
    }
}
