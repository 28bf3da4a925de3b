/// Why a session closed a link: the peer sent a session frame that breaks the format or the
/// protocol. The link cannot be trusted to resynchronise, so it is closed; the session goes on
/// over its other links.
public enum SessionFrameError: Error, Sendable, Hashable, CustomStringConvertible {
    case emptyFrame
    case unknownType(UInt8)
    /// The frame ended inside a field.
    case truncated(frame: String)
    /// Bytes followed the last field.
    case trailingBytes(frame: String, count: Int)
    case unsupportedVersion(UInt8)
    /// The hello names another peer than the one the secure link's handshake authenticated.
    case unauthenticatedPeer(claimed: PeerID, authenticated: PeerID)
    case unknownRole(UInt8)
    /// Both ends claim to have dialled the link, or neither does.
    case roleConflict
    /// The peer named this peer as itself.
    case selfLink
    /// A hello on a link that has already said hello.
    case repeatedHello
    /// The first frame on a link was not a hello.
    case missingHello
    /// The peer acknowledged a message this side never sent.
    case ackBeyondSent(ack: Int, sent: Int)
    /// The peer sent further ahead than the window this side announced.
    case beyondWindow(sequence: Int, limit: Int)
    case zeroSequence
    case messageTooLarge(size: Int, limit: Int)
    case windowTooSmall(Int)
    /// A presence frame longer than the largest report `PresenceReport.Limits` allows.
    case presenceTooLarge(size: Int, limit: Int)

    public var description: String {
        switch self {
        case .emptyFrame: return "an empty session frame"
        case .unknownType(let type): return "a session frame of unknown type 0x\(String(type, radix: 16))"
        case .truncated(let frame): return "a \(frame) frame is cut short"
        case .trailingBytes(let frame, let count): return "a \(frame) frame has \(count) bytes after its last field"
        case .unsupportedVersion(let version): return "the peer speaks session version \(version); this side speaks \(SessionFrame.version)"
        case .unauthenticatedPeer(let claimed, let authenticated): return "the hello claims peer \(claimed) but the handshake authenticated \(authenticated)"
        case .unknownRole(let role): return "a hello has unknown role \(role)"
        case .roleConflict: return "both ends claim the same role (dialer or acceptor) for the link"
        case .selfLink: return "the peer announced this peer's own id"
        case .repeatedHello: return "a second hello on a link"
        case .missingHello: return "the first frame on a link was not a hello"
        case .ackBeyondSent(let ack, let sent): return "the peer acknowledged message \(ack) but only \(sent) were sent"
        case .beyondWindow(let sequence, let limit): return "the peer sent message \(sequence), beyond the window's limit of \(limit)"
        case .zeroSequence: return "a data frame with sequence number 0"
        case .messageTooLarge(let size, let limit): return "a message of \(size) bytes; the limit is \(limit)"
        case .windowTooSmall(let window): return "a hello announces a receive window of \(window) messages"
        case .presenceTooLarge(let size, let limit): return "a presence report of \(size) bytes; the largest valid one takes \(limit)"
        }
    }
}
