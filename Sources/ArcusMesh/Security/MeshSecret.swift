import Crypto

/// A secret every peer of a small mesh shares, proving membership without an authority: the quick
/// offline mode. The handshake mixes it in as a pre-shared key, so a peer without it learns
/// nothing and is refused at the first message. Every holder has full permissions.
///
/// Only secrets out of reach of guessing are accepted (at least 32 bytes and an estimated 128
/// bits, `SecretStrength`): the mesh identifier every peer advertises is derived from the secret,
/// so anyone in radio range can test guesses against it offline, as can anyone who records a
/// handshake. `arcus mesh secret FILE` writes one.
public struct MeshSecret: Sendable {
    public static let minimumBytes = 32
    public static let maximumBytes = 1024
    /// The estimated bits of guessing a secret must take: out of reach of any offline search.
    public static let minimumStrength = 128
    /// The label the advertised mesh identifier is derived under (`MeshCredential.meshHash`).
    static let identifierLabel = Array("arcus mesh identifier".utf8)

    /// The 32-byte pre-shared key the handshake uses, hashed from the secret so that any length works.
    let presharedKey: [UInt8]
    /// The 8 bytes peers advertise so that they find their own mesh: HKDF of the secret under its
    /// own label, which tells nothing about `presharedKey`.
    let identifier: [UInt8]
    /// How hard the secret is to guess.
    public let strength: SecretStrength

    /// A secret of `bytes`; throws `MeshSecretError` unless it holds 32 to 1024 bytes that are
    /// hard enough to guess.
    public init(bytes: some Collection<UInt8>) throws(MeshSecretError) {
        let bytes = Array(bytes)
        guard bytes.count <= Self.maximumBytes else { throw .tooLong(bytes.count) }
        strength = SecretStrength(of: bytes)
        guard bytes.count >= Self.minimumBytes, strength.bits >= Self.minimumStrength else {
            throw .tooWeak(byteCount: bytes.count, strength: strength)
        }
        presharedKey = Array(SHA256.hash(data: Array("arcus mesh secret".utf8) + [0] + bytes))
        identifier = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: bytes), salt: Self.identifierLabel, info: [UInt8](), outputByteCount: 8
        ).withUnsafeBytes { Array($0) }
    }

    /// 32 bytes from the system's cryptographically secure generator (getrandom(2) on Linux).
    public static func random() -> (secret: MeshSecret, bytes: [UInt8]) {
        var generator = SystemRandomNumberGenerator()
        while true {
            let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Random bytes read as bytes are worth about 155 bits; the estimate falling short is
            // as likely as guessing the secret, but costs nothing to rule out.
            if let secret = try? MeshSecret(bytes: bytes) { return (secret, bytes) }
        }
    }
}

/// Why bytes cannot be a mesh secret. Each case says what to do instead.
public enum MeshSecretError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Shorter than 32 bytes, or estimated at fewer than 128 bits of guessing.
    case tooWeak(byteCount: Int, strength: SecretStrength)
    /// Longer than any secret needs to be.
    case tooLong(Int)

    private static let remedy = "Generate one with `arcus mesh secret FILE` (32 random bytes, mode 0600), copy that file to every device "
        + "of the mesh, and name it in mesh_secret_file"

    public var description: String {
        switch self {
        case .tooWeak(let count, let strength):
            return "this mesh secret is too easy to guess: \(count) bytes, \(strength); a mesh secret needs at least "
                + "\(MeshSecret.minimumBytes) bytes worth \(MeshSecret.minimumStrength) bits, because the mesh identifier peers "
                + "advertise lets anyone nearby test guesses offline. \(Self.remedy)"
        case .tooLong(let count):
            return "a mesh secret takes \(MeshSecret.minimumBytes) to \(MeshSecret.maximumBytes) bytes; got \(count). \(Self.remedy)"
        }
    }
}
