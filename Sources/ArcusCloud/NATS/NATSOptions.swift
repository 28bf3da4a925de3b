/// How to reach and stay connected to NATS. Every field is applied by `NATSConnection.init`.
public struct NATSOptions: Sendable {
    /// Server URLs such as `nats://127.0.0.1:4222`; several for a cluster. A URL may carry
    /// `user:password@`.
    public var urls: [String]
    /// The client name that the server shows in its monitoring.
    public var name: String = "arcus"
    public var user: String?
    public var password: String?
    public var token: String?
    /// A NATS `.creds` file (user JWT and NKey seed).
    public var credentialsFile: String?
    /// When set, the connection is secured with TLS using these files.
    public var tls: NATSTLS?
    /// The pause between reconnect attempts to the same server.
    public var reconnectWait: Duration = .milliseconds(250)
    /// How long one connect attempt (TCP, TLS, and the NATS handshake) may take.
    public var connectTimeout: Duration = .seconds(2)
    /// How often the client pings the server; `maxPingsOut` unanswered pings mean the link is dead.
    public var pingInterval: Duration = .seconds(2)
    public var maxPingsOut = 2
    /// Bytes of publishes kept while reconnecting and sent once connected again.
    public var reconnectBufferBytes = 8 << 20
    /// When true, `NATSConnection.init` returns even when no server answers yet, and the
    /// connection comes up when one does (`.reconnected` is then reported).
    public var retryOnFailedConnect = true

    public init(urls: [String]) {
        self.urls = urls
    }
}

extension Duration {
    /// Whole milliseconds, the unit of libnats' timeouts (rounded up, so a tiny duration is not 0).
    var natsMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        let milliseconds = seconds * 1_000 + attoseconds / 1_000_000_000_000_000
        let remainder = attoseconds % 1_000_000_000_000_000
        return milliseconds + (remainder > 0 ? 1 : 0)
    }

    /// Whole nanoseconds, the unit of JetStream's durations.
    var natsNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
