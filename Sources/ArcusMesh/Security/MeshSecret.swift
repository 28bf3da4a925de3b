import Crypto

/// A secret every peer of a small mesh shares, proving membership without an authority: the quick
/// offline mode. The handshake mixes it in as a pre-shared key, so a peer without it learns
/// nothing and is refused at the first message. Every holder has full permissions.
public struct MeshSecret: Sendable {
    /// Fewer bytes could be guessed offline from a recorded handshake.
    public static let minimumBytes = 16
    public static let maximumBytes = 1024

    /// The 32-byte pre-shared key the handshake uses, hashed from the secret so that any length works.
    let presharedKey: [UInt8]

    /// A secret of `bytes`; throws `MeshSecretError.wrongLength` unless it holds 16 to 1024 bytes.
    public init(bytes: some Collection<UInt8>) throws(MeshSecretError) {
        guard (Self.minimumBytes...Self.maximumBytes).contains(bytes.count) else {
            throw .wrongLength(bytes.count)
        }
        presharedKey = Array(SHA256.hash(data: Array("arcus mesh secret".utf8) + [0] + Array(bytes)))
    }

    /// 32 random bytes.
    public static func random() -> (secret: MeshSecret, bytes: [UInt8]) {
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255) }
        // 32 bytes is within the bounds.
        return (try! MeshSecret(bytes: bytes), bytes)
    }
}

public enum MeshSecretError: Error, Sendable, Equatable, CustomStringConvertible {
    case wrongLength(Int)

    public var description: String {
        switch self {
        case .wrongLength(let count):
            return "a mesh secret takes \(MeshSecret.minimumBytes) to \(MeshSecret.maximumBytes) bytes; got \(count). "
                + "Generate one with `head -c 32 /dev/urandom | xxd -p -c 64`"
        }
    }
}
