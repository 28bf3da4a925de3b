extension LinkKind {
    /// The session's default preference: cheapest and fastest first (`LinkKind`'s case order).
    public var preferenceRank: Int { LinkKind.allCases.firstIndex(of: self)! }
}

/// Which of a session's links carries its traffic: the kind order (LAN over Bluetooth over cloud
/// over loopback), corrected by the round trip each link measures with its heartbeats. A less
/// preferred link wins only when it is clearly faster, so that jitter does not flap the choice.
public struct LinkPreference: Sendable {
    /// How many times slower a preferred link's round trip must be before a less preferred one wins.
    public var slownessFactor: Double = 4
    /// And by at least this much, so that sub-millisecond round trips never decide.
    public var slownessMargin: Duration = .milliseconds(20)

    public init() {}

    /// Whether `a` should carry traffic rather than `b`.
    public func prefers(_ a: (kind: LinkKind, roundTrip: Duration?), over b: (kind: LinkKind, roundTrip: Duration?)) -> Bool {
        if let rttA = a.roundTrip, let rttB = b.roundTrip {
            if rttA * slownessFactor + slownessMargin < rttB { return true }
            if rttB * slownessFactor + slownessMargin < rttA { return false }
        }
        return a.kind.preferenceRank < b.kind.preferenceRank
    }
}
