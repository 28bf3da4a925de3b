/// What using a link costs its owner, beyond time: a session prefers a free link to a metered one
/// of the same speed, and an agent may refuse to open a metered one for bulk traffic.
public enum LinkCost: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    /// Local radio or wire: LAN, Bluetooth, in-process.
    case free
    /// Billed or capped by the byte: a cloud relay, a cellular uplink.
    case metered

    public static func < (lhs: LinkCost, rhs: LinkCost) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { self == .free ? "free" : "metered" }
}

/// What a link knows of its own path, from the transport's measurements or, for an emulated link,
/// from the conditions it emulates. Every figure is optional: a link that just came up may know
/// none yet. A session measures round trips itself with its heartbeats (see `LinkPreference`);
/// these are the transport's figures, available before the first heartbeat.
public struct LinkMetrics: Sendable, Hashable, CustomStringConvertible {
    /// The round trip the transport measured or expects.
    public var roundTrip: Duration?
    /// The rate the link sustains in each direction, in bytes of messages per second.
    public var bytesPerSecond: Double?
    public var cost: LinkCost
    /// How long the path keeps what is sent while the peer is away (a relay that stores and
    /// forwards, such as NATS JetStream), or nil for a path that loses it. A session waits this
    /// long for a silent peer before it calls the link dead: the peer reads what waited when it
    /// returns, and the link goes on where it stopped.
    public var storesFramesFor: Duration?

    public init(roundTrip: Duration? = nil, bytesPerSecond: Double? = nil, cost: LinkCost, storesFramesFor: Duration? = nil) {
        self.roundTrip = roundTrip
        self.bytesPerSecond = bytesPerSecond
        self.cost = cost
        self.storesFramesFor = storesFramesFor
    }

    public var description: String {
        var parts = [cost.description]
        if let roundTrip { parts.append("rtt \(roundTrip)") }
        if let bytesPerSecond { parts.append("\(Int(bytesPerSecond)) B/s") }
        if let storesFramesFor { parts.append("stores frames for \(storesFramesFor)") }
        return parts.joined(separator: ", ")
    }
}

extension LinkKind {
    /// What a link of this kind costs unless the transport knows better: only the cloud is billed.
    public var defaultCost: LinkCost { self == .cloud ? .metered : .free }
}

extension Link {
    /// Nothing measured; the cost that the link's kind implies. Transports that measure override it.
    public var metrics: LinkMetrics { LinkMetrics(cost: kind.defaultCost) }
}
