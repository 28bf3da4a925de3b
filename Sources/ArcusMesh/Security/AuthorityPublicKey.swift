import Crypto

/// A mesh authority's Ed25519 public key: what every peer of a certified mesh is given, to check
/// the certificates others show. Held as its 32 bytes, checked once.
public struct AuthorityPublicKey: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// Reads 32 bytes of Ed25519 public key; nil for anything else.
    public init?(bytes: some Collection<UInt8>) {
        let bytes = Array(bytes)
        guard bytes.count == 32, (try? Curve25519.Signing.PublicKey(rawRepresentation: bytes)) != nil else { return nil }
        self.bytes = bytes
    }

    init(_ key: Curve25519.Signing.PublicKey) {
        bytes = Array(key.rawRepresentation)
    }

    func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: bytes) else { return false }
        return key.isValidSignature(signature, for: message)
    }

    /// The 64 hex digits of the key, as `authority.pub` holds it.
    public var description: String { Hex.encode(bytes) }
}
