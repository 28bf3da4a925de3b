extension LinkKind {
    /// The session's default preference: cheapest and fastest first (`LinkKind`'s case order).
    public var preferenceRank: Int { LinkKind.allCases.firstIndex(of: self)! }
}

/// Which of a session's links carries its traffic: the kind order (LAN over Bluetooth over cloud
/// over loopback), corrected by the round trip each link measures with its heartbeats and by the
/// throughput its acknowledged data shows. A less preferred link wins only when it is clearly
/// faster, so that jitter does not flap the choice.
///
/// Also when bulk traffic may add a second link: once the best one is saturated.
public struct LinkPreference: Sendable {
    /// What the session knows of one link when it compares two.
    public struct Candidate: Sendable, Hashable {
        public var kind: LinkKind
        /// Smoothed heartbeat round trip, once enough replies back it.
        public var roundTrip: Duration?
        /// Bytes per second: measured, or else the transport's figure; nil when neither is known.
        public var throughput: Double?

        public init(kind: LinkKind, roundTrip: Duration? = nil, throughput: Double? = nil) {
            self.kind = kind
            self.roundTrip = roundTrip
            self.throughput = throughput
        }
    }

    /// How many times slower a preferred link's round trip must be before a less preferred one wins.
    public var slownessFactor: Double = 4
    /// And by at least this much, so that sub-millisecond round trips never decide.
    public var slownessMargin: Duration = .milliseconds(20)
    /// How many times more throughput a less preferred link must have before it wins.
    public var throughputFactor: Double = 4
    /// Bytes of ours in flight on the best link, not yet acknowledged, beyond which it counts as
    /// saturated and bulk traffic also goes on the second-best link. Small, interactive traffic
    /// never gets there, so it stays on the best link.
    public var bulkThresholdBytes = 64 << 10

    public init() {}

    /// Whether `a` should carry traffic rather than `b`: the round trip first (what interactive
    /// traffic feels), then throughput (what bulk feels), then the kind order.
    public func prefers(_ a: Candidate, over b: Candidate) -> Bool {
        if let rttA = a.roundTrip, let rttB = b.roundTrip {
            if rttA * slownessFactor + slownessMargin < rttB { return true }
            if rttB * slownessFactor + slownessMargin < rttA { return false }
        }
        if let rateA = a.throughput, let rateB = b.throughput {
            if rateA > rateB * throughputFactor { return true }
            if rateB > rateA * throughputFactor { return false }
        }
        return a.kind.preferenceRank < b.kind.preferenceRank
    }

    /// Whether `a` should carry traffic rather than `b`, by kind and round trip alone.
    public func prefers(_ a: (kind: LinkKind, roundTrip: Duration?), over b: (kind: LinkKind, roundTrip: Duration?)) -> Bool {
        prefers(Candidate(kind: a.kind, roundTrip: a.roundTrip), over: Candidate(kind: b.kind, roundTrip: b.roundTrip))
    }

    /// Whether `second` is worth adding beside a saturated `best`: not when it is clearly slower,
    /// since the receiver delivers in order and each message on a slow link holds up those behind it.
    public func helps(_ second: Candidate, alongside best: Candidate) -> Bool {
        guard let rateBest = best.throughput, let rateSecond = second.throughput else { return true }
        return rateSecond * throughputFactor >= rateBest
    }
}
