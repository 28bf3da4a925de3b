/// A link as a session sees it, for status pages, logs and tests.
public struct SessionLinkStatus: Sendable, Hashable, CustomStringConvertible {
    /// The session's number for the link, unique within the session.
    public var number: Int
    public var kind: LinkKind
    public var name: String
    /// Who dialled it: the tie-break between duplicate links compares this.
    public var dialer: PeerID
    public var dialID: UInt64
    /// Smoothed round trip measured by heartbeats; nil until the first reply.
    public var roundTrip: Duration?
    /// Whether this side sends its messages on the link.
    public var isActive: Bool
    /// Whether the link lost the dial tie-break and waits, carrying nothing of ours, until the
    /// winner is heard from (then it closes) or dies (then it takes over).
    public var isYielding: Bool
    /// Data frames received on the link, duplicates included.
    public var dataFramesReceived: Int
    /// When the session bound it.
    public var boundAt: ContinuousClock.Instant

    public var description: String {
        "\(kind) \(name)" + (roundTrip.map { ", rtt \($0)" } ?? "") + (isActive ? ", active" : "") + (isYielding ? ", yielding" : "")
    }
}

/// Why a session let go of a link.
public enum LinkRemoval: Sendable, Hashable, CustomStringConvertible {
    /// The link closed under the session (either side, or the transport noticed it was gone).
    case closed
    /// Nothing was heard on it for `missedHeartbeatsBeforeDead` heartbeat intervals.
    case heartbeatsMissed
    /// Both peers dialled at once; the other link won the tie-break.
    case duplicate
    /// The peer broke the session protocol on it.
    case peerViolation(SessionFrameError)
    /// The peer broke the fragment format on it.
    case fragmentViolation(FragmentationError)
    /// The peer restarted; links bound to its earlier incarnation are stale.
    case peerRestarted
    /// The session was closed.
    case sessionClosed
    /// Let go to make room for another peer on a transport with few links.
    case released

    public var description: String {
        switch self {
        case .closed: return "the link closed"
        case .heartbeatsMissed: return "heartbeats missed"
        case .duplicate: return "a duplicate link lost the tie-break"
        case .peerViolation(let error): return "the peer broke the session protocol: \(error)"
        case .fragmentViolation(let error): return "the peer broke the fragment format: \(error)"
        case .peerRestarted: return "the peer restarted"
        case .sessionClosed: return "the session closed"
        case .released: return "let go to make room for another peer"
        }
    }
}

/// What happens to a session's links, in order. The stream keeps the newest events if nobody
/// reads it, so an unread stream costs bounded memory.
public enum SessionEvent: Sendable, Hashable {
    case linkAdded(SessionLinkStatus)
    case linkRemoved(SessionLinkStatus, LinkRemoval)
    /// This side now sends on `link` (nil: on nothing).
    case activeLinkChanged(SessionLinkStatus?)
    /// The session's last link is gone: messages wait (up to the window) until a transport opens
    /// one, which the owner should now ask for.
    case needsLink
}
