import Crypto

/// How a secret Ed25519 key is stored (a peer's identity, a mesh authority): a magic string that
/// names the kind and format version, then the key's 32-byte seed.
struct SigningKeyEncoding {
    let magic: [UInt8]

    init(magic: String) {
        self.magic = Array(magic.utf8)
    }

    var size: Int { magic.count + 32 }

    func encode(seed: [UInt8]) -> [UInt8] { magic + seed }

    /// The key `bytes` hold; nil unless they are exactly `magic` and a seed.
    func decode(_ bytes: some Collection<UInt8>) -> Curve25519.Signing.PrivateKey? {
        let bytes = Array(bytes)
        guard bytes.count == size, bytes.starts(with: magic) else { return nil }
        return try? Curve25519.Signing.PrivateKey(rawRepresentation: bytes[magic.count...])
    }

    /// What a valid encoding looks like, for errors.
    var expectation: String { "\(size) bytes starting with \"\(String(decoding: magic, as: UTF8.self))\"" }
}
