/// One way of reaching peers — LAN, Bluetooth, a cloud relay, loopback — that discovers them and
/// opens and accepts `Link`s to them. It knows nothing of sessions or security: its owner (the
/// agent) secures each link and hands it to the `Multiplexer`.
///
/// A transport runs once: `start()`, then `stop()`. Every transport passes the transport
/// conformance suite (TransportConformance.swift, in Tests/ArcusTransportConformance), and its
/// links the link conformance suite. All members may be called from any task.
public protocol Transport: AnyObject, Sendable {
    /// The kind of every link and endpoint this transport makes.
    var kind: LinkKind { get }

    /// Where the peers of this transport reach this one, as it advertises itself.
    var localEndpoint: TransportEndpoint { get }

    /// Peers appearing and vanishing, and links peers open to this one, in order. It has one
    /// consumer, and finishes once the transport is stopped. Consume it from before `start()`:
    /// an accepted link nobody takes is a link nobody closes.
    var events: AsyncStream<TransportEvent> { get }

    /// Begins advertising this peer, discovering others and accepting links. Once started, every
    /// peer within reach is announced by `.peerAppeared`. Throws `TransportError.alreadyStopped`
    /// after `stop()`; starting twice does nothing.
    func start() async throws

    /// Stops advertising and accepting, closes every link the transport opened or accepted, and
    /// finishes `events`. Idempotent.
    func stop() async

    /// Opens a link to the peer at `endpoint`; the peer's transport announces it as
    /// `.linkAccepted`. Fails with a `TransportError` that says why — not running, wrong kind,
    /// unknown, out of reach, stopped — as soon as the transport knows, without waiting out a
    /// timeout where it can tell at once.
    func open(to endpoint: TransportEndpoint) async throws -> any Link

    /// The peers within reach now: those announced by `.peerAppeared` and not lost since.
    var reachablePeers: [TransportEndpoint] { get async }
}
