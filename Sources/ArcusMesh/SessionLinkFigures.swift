/// One link of a session as its choice of link weighs it: what presence reports and status pages
/// show. A snapshot; `PeerSession.linkFigures` makes a fresh one.
public struct SessionLinkFigures: Sendable, Hashable, CustomStringConvertible {
    /// The session's number for the link, as in `SessionLinkStatus`.
    public var number: Int
    public var kind: LinkKind
    /// Smoothed round trip measured by heartbeats; nil until the first reply.
    public var roundTrip: Duration?
    /// Bytes per second: measured from acknowledged data once the link has been busy long enough,
    /// the transport's figure before that; nil when neither is known.
    public var throughput: Double?
    /// Whether `throughput` was measured rather than taken from the transport.
    public var isThroughputMeasured: Bool
    /// Whether this side sends its messages on the link.
    public var isActive: Bool
    /// Whether this is the second link, which also takes bulk traffic while the active one is saturated.
    public var carriesBulk: Bool

    public init(
        number: Int, kind: LinkKind, roundTrip: Duration?, throughput: Double?, isThroughputMeasured: Bool,
        isActive: Bool, carriesBulk: Bool
    ) {
        self.number = number
        self.kind = kind
        self.roundTrip = roundTrip
        self.throughput = throughput
        self.isThroughputMeasured = isThroughputMeasured
        self.isActive = isActive
        self.carriesBulk = carriesBulk
    }

    public var description: String {
        var parts = ["\(kind) #\(number)"]
        if let roundTrip { parts.append("rtt \(roundTrip)") }
        if let throughput { parts.append("\(Int(throughput)) B/s" + (isThroughputMeasured ? " measured" : " reported")) }
        if isActive { parts.append("active") }
        if carriesBulk { parts.append("bulk") }
        return parts.joined(separator: ", ")
    }
}
