import Crypto

/// A peer's stable name in the mesh: the first 16 bytes of the SHA-256 of its public key, so it
/// cannot be claimed without the key it names. Shown as 32 lowercase hex digits.
public struct PeerID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Bytes of the hash kept: 128 bits make collisions out of reach for any mesh.
    public static let size = 16

    public let bytes: [UInt8]

    init(of publicKey: PeerPublicKey) {
        bytes = Array(SHA256.hash(data: publicKey.bytes).prefix(Self.size))
    }

    /// An id read from the wire, such as a neighbour named in a presence report; nil unless it is
    /// exactly `size` bytes. It proves nothing about who holds it: only the handshake binds an id
    /// to a key.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.size else { return nil }
        self.bytes = Array(bytes)
    }

    public static func < (lhs: PeerID, rhs: PeerID) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    public var description: String { Hex.encode(bytes) }
}
