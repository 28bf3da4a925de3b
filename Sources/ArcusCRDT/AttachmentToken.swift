/// What an ATTACHMENT field holds: the identity of a blob (its SHA-256), its length and
/// metadata. The blob itself is fetched on demand.
public struct AttachmentToken: Sendable, Hashable {
    /// SHA-256 of the content, 32 bytes.
    public var hash: [UInt8]
    public var length: Int64
    public var metadata: [String: String]

    public init(hash: [UInt8], length: Int64, metadata: [String: String] = [:]) {
        self.hash = hash
        self.length = length
        self.metadata = metadata
    }

    public var hashHex: String {
        hash.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// The hash `hex` spells (two hex digits a byte, as `hashHex` writes it); nil for anything
    /// else.
    public static func hash(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[i...i + 1], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }

    /// How queries see the token: `{"_attachment": "<sha256 hex>", "len": n, "metadata": {…}}`.
    public var value: Value {
        .object([
            "_attachment": .string(hashHex),
            "len": .int(length),
            "metadata": .object(metadata.mapValues { .string($0) }),
        ])
    }

    /// The token a query returned (`value`'s form), so that an app can fetch its blob; nil for
    /// any other value.
    public init?(value: Value) {
        guard case .object(let fields) = value, case .string(let hex)? = fields["_attachment"], hex.utf8.count == 64,
              let hash = Self.hash(hex: hex), case .int(let length)? = fields["len"], length >= 0 else { return nil }
        var metadata: [String: String] = [:]
        if case .object(let entries)? = fields["metadata"] {
            for (key, entry) in entries {
                guard case .string(let text) = entry else { return nil }
                metadata[key] = text
            }
        }
        self.init(hash: hash, length: length, metadata: metadata)
    }
}
