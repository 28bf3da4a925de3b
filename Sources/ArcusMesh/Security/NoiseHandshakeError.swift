/// Why `NoiseHandshakeState` could not read (or, for `keysSpent`, write) a handshake message.
/// The mesh handshake turns these into `HandshakeError`s; the vector runner reports them as they are.
enum NoiseHandshakeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What part of a message an error is about, and who sent it.
    struct Part: Sendable, Equatable, CustomStringConvertible {
        enum Kind: Sendable, Equatable {
            case ephemeralKey, staticKey, payload
        }

        let kind: Kind
        let sender: HandshakeRole

        var description: String {
            let whose = sender == .initiator ? "the initiator's" : "the responder's"
            switch kind {
            case .ephemeralKey: return "\(whose) ephemeral key"
            case .staticKey: return "\(whose) static key"
            case .payload: return "\(whose) payload"
            }
        }
    }

    /// The message ends before this part does.
    case cutShort(Part)
    /// This encrypted part did not authenticate: a wrong key (with a pre-shared key, the other
    /// side does not hold the same one), or altered bytes.
    case notAuthentic(Part)
    /// The peer's key is a low-order point: Diffie-Hellman with it gives no shared secret.
    case noSharedSecret
    /// A cipher's 2^64 - 1 nonces are used up (never in practice).
    case keysSpent

    var description: String {
        switch self {
        case .cutShort(let part): return "\(part) is cut short"
        case .notAuthentic(let part): return "\(part) did not authenticate"
        case .noSharedSecret: return "the peer sent a key that gives no shared secret"
        case .keysSpent: return "the handshake keys are spent"
        }
    }
}
