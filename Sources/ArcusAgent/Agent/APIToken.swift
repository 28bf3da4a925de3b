import ArcusMesh

/// The secret that every data route of the HTTP API wants, as `Authorization: Bearer <hex>`:
/// 32 random bytes, written as 64 lowercase hex digits. The agent makes it on its first start
/// (`APITokenFile`); whoever can read it can read and write the whole store.
///
/// Its description never shows the bytes, so that a token that reaches a log line or an error
/// message by mistake gives nothing away; `hex` is the one way to spell it out.
public struct APIToken: Sendable, Equatable, CustomStringConvertible {
    /// The token's length in bytes.
    public static let byteCount = 32

    private let bytes: [UInt8]

    /// A new token from the system's cryptographically secure generator (getrandom(2)).
    public static func random() -> APIToken {
        var generator = SystemRandomNumberGenerator()
        return APIToken(validated: (0..<byteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The token `text` spells (64 hex digits, either case; surrounding whitespace such as a
    /// file's last newline is ignored), or nil.
    public init?(hex text: String) {
        guard let bytes = Hex.decode(text), bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    private init(validated bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The token as the header and the files carry it: 64 lowercase hex digits.
    public var hex: String { Hex.encode(bytes) }

    public var description: String { "APIToken(<redacted>)" }

    /// Whether `presented` (what a request's `Authorization: Bearer` carried) is this token. The
    /// time taken depends only on the presented text's length, never on how many of its bytes
    /// match, so that a caller cannot find the token a byte at a time by timing the answers.
    func matches(_ presented: Substring) -> Bool {
        // Decoding looks at the presented text only; the comparison is the part that must not leak.
        guard let candidate = Hex.decode(String(presented)), candidate.count == Self.byteCount else { return false }
        var difference: UInt8 = 0
        for index in 0..<Self.byteCount { difference |= candidate[index] ^ bytes[index] }
        return difference == 0
    }

    public static func == (left: APIToken, right: APIToken) -> Bool {
        left.matches(Substring(right.hex))
    }
}
