/// How a `PeerSession` paces itself. Both ends should use the same values; the receive window is
/// announced in every link's hello, so a sender never exceeds what its peer accepts.
public struct SessionConfiguration: Sendable {
    /// How often each link sends a heartbeat, which measures its round trip and proves it alive.
    public var heartbeatInterval: Duration = .milliseconds(250)
    /// The heartbeat interval of a metered link (a cloud relay): every heartbeat is billed, and
    /// such a link is the last choice, carrying traffic only when no free link is left to fail
    /// over to, so finding it dead quickly buys little.
    public var meteredHeartbeatInterval: Duration = .seconds(1)
    /// A link from which nothing has been heard for this many intervals is dead.
    public var missedHeartbeatsBeforeDead = 3
    /// Messages sent but not yet acknowledged; `send` suspends beyond it. Also what this side
    /// accepts ahead of what its consumer has taken.
    public var window = 64
    /// Bytes sent but not acknowledged; `send` suspends beyond it (a larger message goes alone).
    public var windowBytes = 4 << 20
    /// The largest message `send` accepts and the peer may send.
    public var maximumMessageSize = 1 << 20
    /// How long an acknowledgement may wait for a data frame to ride on.
    public var ackDelay: Duration = .milliseconds(5)
    /// How long a new link may take to say hello before it is closed.
    public var helloTimeout: Duration = .seconds(5)
    public var preference = LinkPreference()

    public init() {}

    /// How often a link with `metrics` sends heartbeats.
    func heartbeatInterval(for metrics: LinkMetrics) -> Duration {
        metrics.cost == .metered ? max(heartbeatInterval, meteredHeartbeatInterval) : heartbeatInterval
    }

    /// Silence after which a link with `metrics` is declared dead: missed heartbeats, or, on a
    /// path that stores frames for an absent peer, as long as it stores them.
    func deadAfter(for metrics: LinkMetrics) -> Duration {
        max(heartbeatInterval(for: metrics) * missedHeartbeatsBeforeDead, metrics.storesFramesFor ?? .zero)
    }
}
