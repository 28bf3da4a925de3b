/// Why a `Multiplexer` could not bind a new link to a session. The link is closed; the
/// multiplexer and its sessions go on.
public enum LinkAdmissionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The link closed before the peer said hello (a dial that failed half-way).
    case closedBeforeHello(link: String)
    /// The peer said nothing within `helloTimeout`.
    case helloTimedOut(link: String, after: Duration)
    /// The peer's first frame was not a valid hello, or contradicted ours.
    case peerViolation(link: String, SessionFrameError)
    case fragmentViolation(link: String, FragmentationError)
    /// The caller's `mayBind` said no once the peer had said hello (no room for another link).
    case notAdmitted(link: String, peer: PeerID)
    case multiplexerClosed

    public var description: String {
        switch self {
        case .closedBeforeHello(let link): return "\(link) closed before the peer said hello"
        case .helloTimedOut(let link, let after): return "\(link): no hello from the peer within \(after)"
        case .peerViolation(let link, let error): return "\(link): \(error)"
        case .fragmentViolation(let link, let error): return "\(link): \(error)"
        case .notAdmitted(let link, let peer): return "\(link): no room for another link of its kind (peer \(peer))"
        case .multiplexerClosed: return "the multiplexer is closed"
        }
    }
}

/// What a `Multiplexer` reports about all its sessions.
public enum MultiplexerEvent: Sendable, Hashable {
    /// A link to `peer` was bound to its session (it may still lose a tie-break).
    case linkBound(peer: PeerID, kind: LinkKind)
    /// A new link was refused before it reached a session.
    case linkRefused(LinkAdmissionError)
    /// The session with `peer` lost its last link: ask the transports to open one.
    case needsLink(PeerID)
    /// A presence report from `peer` did not decode (`reason`); it went no further, the link stays.
    case presenceRefused(from: PeerID, reason: String)
}
