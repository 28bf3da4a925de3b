/// What carries a link: the transports Arcus speaks, in the order sessions prefer them.
public enum LinkKind: String, Sendable, CaseIterable {
    case lan, bluetooth, cloud, loopback
}

/// Why a link stopped.
public enum LinkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The link was closed (by either side, or because the peer vanished); nothing more moves.
    case closed
    /// A message larger than the link's MTU was given to `send`.
    case messageTooLarge(size: Int, mtu: Int)

    public var description: String {
        switch self {
        case .closed: return "the link is closed"
        case .messageTooLarge(let size, let mtu): return "a message of \(size) bytes does not fit the link's MTU of \(mtu) bytes"
        }
    }
}

/// An ordered, message-preserving duplex pipe to one peer, such as an L2CAP channel or a TCP
/// connection with framing. Messages arrive whole, in the order they were sent, or not at all
/// once the link closes; it may close at any moment, from either side.
///
/// `send` suspends while the link is saturated, so a producer that awaits it never queues more
/// than the link holds. `incoming` has one consumer.
///
/// Every link passes the link conformance suite (LinkConformance.swift, in
/// Tests/ArcusTransportConformance), and every `Transport`'s links the transport conformance suite
/// (TransportConformance.swift).
/// To carry messages larger than `mtu`, wrap the link in a `MessageChannel`.
public protocol Link: AnyObject, Sendable {
    var kind: LinkKind { get }
    /// The largest message `send` accepts, in bytes.
    var mtu: Int { get }
    /// A name for logs: the transport and the remote address.
    var description: String { get }
    /// The path's round trip, rate and cost as the transport knows them; nothing measured and the
    /// kind's cost by default. Links that wrap another report the wrapped link's.
    var metrics: LinkMetrics { get }
    /// Sends one message of at most `mtu` bytes, suspending while the link is saturated; it
    /// returns once the link has taken the message, not once the peer has read it.
    ///
    /// Throws `LinkError.messageTooLarge` for a message over `mtu`, and `LinkError.closed` once the
    /// link is closed, also when it closes while `send` is suspended. If the calling task is
    /// cancelled while `send` is suspended, it throws `CancellationError` and the message is not
    /// sent. Messages of concurrent callers are not ordered among themselves.
    func send(_ message: [UInt8]) async throws
    /// The messages the peer sent, in order; finishes when the link closes. Messages the consumer
    /// has not taken by then are lost. Cancelling the consuming task finishes the stream.
    var incoming: AsyncStream<[UInt8]> { get }
    /// Closes both directions; messages not yet delivered are lost, and suspended sends throw
    /// `LinkError.closed`. Idempotent.
    func close()
}
