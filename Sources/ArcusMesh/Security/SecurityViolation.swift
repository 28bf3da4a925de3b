/// Why a `SecureLink` closed its link: the peer's frames could not have come from the session's
/// other end, untouched and in order. Nothing of such a frame, or after it, is delivered.
public enum SecurityViolation: Error, Sendable, Hashable, CustomStringConvertible {
    /// Frame number `counter` of the session did not authenticate: it was altered, replayed,
    /// reordered, sealed in another session, or is shorter than a tag.
    case frameFailedAuthentication(counter: UInt64, size: Int)
    /// The session sent or received 2^64 - 1 frames; its keys may not seal more.
    case counterExhausted

    public var description: String {
        switch self {
        case .frameFailedAuthentication(let counter, let size):
            return "frame #\(counter) of the session (\(size) bytes) failed authentication: tampered, replayed, reordered or from another session"
        case .counterExhausted:
            return "the session's frame counter is spent; a new handshake is needed"
        }
    }
}
