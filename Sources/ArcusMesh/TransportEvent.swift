/// What a transport tells its owner, in the order it happened.
public enum TransportEvent: Sendable, CustomStringConvertible {
    /// A peer came within reach at `endpoint`: `open(to:)` may now reach it.
    case peerAppeared(TransportEndpoint)
    /// A peer announced earlier is no longer within reach. Links already open to it are not
    /// closed by this event; they fail on their own when the path is gone.
    case peerLost(TransportEndpoint)
    /// A peer opened a link to this transport. The owner now owns the link: it hands it to the
    /// handshake and the `Multiplexer` (as `.acceptor`), or closes it. `pending` is the link's
    /// slot in the transport's `PendingHandshakes` (nil where no stranger can open links, as on
    /// the in-process loopback): the owner finishes the handshake within `pending.remaining`,
    /// closing the link otherwise, and settles it.
    case linkAccepted(any Link, from: TransportEndpoint, pending: PendingHandshake? = nil)

    public var description: String {
        switch self {
        case .peerAppeared(let endpoint): return "peer appeared at \(endpoint)"
        case .peerLost(let endpoint): return "peer lost at \(endpoint)"
        case .linkAccepted(let link, let endpoint, _): return "link \(link.description) accepted from \(endpoint)"
        }
    }
}
