import ArcusMesh

/// How a `CloudTransport` reaches its relay and paces its links.
public struct CloudSettings: Sendable {
    /// The relay's connection options: URLs (several for a cluster), TLS, credentials.
    public var connection: NATSOptions
    /// The mesh this peer belongs to (`MeshCredential.meshHash`); peers of other meshes on the same
    /// relay never see each other.
    public var meshHash: String
    /// Store-and-forward through JetStream: frames for a peer that is away wait in the mesh's
    /// stream, bounded by `storedFramesMaxAge` and `storedFramesMaxBytes`. When the relay has no
    /// JetStream, the transport says so once and relays without storing.
    public var storeAndForward = true
    public var storedFramesMaxAge: Duration = .seconds(3_600)
    public var storedFramesMaxBytes = 256 << 20
    /// How often this peer says it is here, and how long a peer that stopped saying so stays
    /// reachable.
    public var announceInterval: Duration = .milliseconds(1_000)
    public var peerExpiry: Duration = .milliseconds(3_500)
    /// How long `open(to:)` waits to hear a peer it has not heard yet.
    public var announcementWait: Duration = .seconds(2)
    /// How long `open(to:)` waits for the peer to accept.
    public var dialTimeout: Duration = .seconds(5)
    /// The largest message a link carries (NATS's default payload limit is 1 MiB).
    public var mtu = 32 << 10
    /// Bytes a link's receiver accepts ahead of its consumer: the sender's credit.
    public var window = 256 << 10
    /// The most peers kept track of (announced, with keys): anyone can make up identities and
    /// announce them, so what they cost is bounded. Peers past it are ignored, with one warning.
    public var maximumPeers = 1_024

    public init(connection: NATSOptions, meshHash: String) {
        self.connection = connection
        self.meshHash = meshHash
    }
}
