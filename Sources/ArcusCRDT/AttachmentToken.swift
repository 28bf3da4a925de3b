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

    /// How queries see the token: `{"_attachment": "<sha256 hex>", "len": n, "metadata": {…}}`.
    public var value: Value {
        .object([
            "_attachment": .string(hashHex),
            "len": .int(length),
            "metadata": .object(metadata.mapValues { .string($0) }),
        ])
    }
}
