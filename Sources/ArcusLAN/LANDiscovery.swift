import ArcusMesh

/// A source of LAN peers for a `LANTransport`: a fixed list (`StaticPeers`), mDNS through Avahi
/// (`AvahiService`, in ArcusLAN), or a test's directory. The transport announces what its sources find as its own
/// `.peerAppeared` and `.peerLost`, and merges them: a peer found twice is announced once.
///
/// A source is asked once per transport start, with the endpoint the transport listens on (its
/// port bound), so that a source that advertises (mDNS) can publish it. The stream ends when the
/// transport stops: the transport cancels its consumption, and a source stops advertising and
/// browsing in the stream's `onTermination`.
public protocol LANDiscovery: Sendable {
    func peers(advertising local: TransportEndpoint) -> AsyncStream<LANDiscoveryEvent>
}

/// What a discovery source saw.
public enum LANDiscoveryEvent: Sendable, Hashable {
    /// A peer listens at the endpoint (a `.lan` one, its address a `LANAddress`).
    case appeared(TransportEndpoint)
    /// The peer announced at the endpoint's address is gone.
    case lost(TransportEndpoint)
}
