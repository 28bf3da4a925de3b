import Crypto

/// The public half of a `PeerIdentity`: its Ed25519 signing key and its X25519 key-agreement key,
/// 32 bytes each, in that order. Certificates sign all 64 bytes, and the `PeerID` hashes them, so
/// the key the handshake authenticates (the agreement key) is bound to the name and permissions.
///
/// Held as bytes, checked once: swift-crypto's key types are not `Sendable`, these bytes are.
public struct PeerPublicKey: Sendable, Hashable, CustomStringConvertible {
    public static let size = 64

    /// The signing key's 32 bytes, then the agreement key's.
    public let bytes: [UInt8]

    init(signingKey: Curve25519.Signing.PublicKey, agreementKey: Curve25519.KeyAgreement.PublicKey) {
        bytes = Array(signingKey.rawRepresentation) + Array(agreementKey.rawRepresentation)
    }

    /// Reads the 64 bytes `bytes` holds; throws `IdentityError.malformedPublicKey` for any other
    /// length or for bytes that are not keys.
    public init(bytes: some Collection<UInt8>) throws(IdentityError) {
        let bytes = Array(bytes)
        guard bytes.count == Self.size,
              (try? Curve25519.Signing.PublicKey(rawRepresentation: bytes[0..<32])) != nil,
              (try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: bytes[32..<64])) != nil
        else { throw .malformedPublicKey(byteCount: bytes.count) }
        self.bytes = bytes
    }

    /// The key that verifies the peer's signatures.
    public var signingKey: Curve25519.Signing.PublicKey {
        // Checked when the bytes came in.
        try! Curve25519.Signing.PublicKey(rawRepresentation: bytes[0..<32])
    }

    /// The key the handshake proves the peer holds.
    public var agreementKey: Curve25519.KeyAgreement.PublicKey {
        try! Curve25519.KeyAgreement.PublicKey(rawRepresentation: bytes[32..<64])
    }

    var agreementKeyBytes: ArraySlice<UInt8> { bytes[32..<64] }

    public var peerID: PeerID { PeerID(of: self) }

    /// The 128 hex digits of `bytes`, as `arcus mesh issue --public-key` takes them.
    public var description: String { Hex.encode(bytes) }
}
