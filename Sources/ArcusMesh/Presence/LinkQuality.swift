/// What is known of one link's quality, as its ends measure it. Every figure is optional: a link
/// that just came up has none yet.
public struct LinkQuality: Sendable, Hashable, CustomStringConvertible {
    /// The measured round-trip time, in whole milliseconds.
    public var rttMilliseconds: UInt32?
    /// The estimated throughput, in bytes per second.
    public var throughput: UInt64?
    /// Whether the session to that peer currently sends on this link (the others are standbys).
    public var isActive: Bool

    public init(rttMilliseconds: UInt32? = nil, throughput: UInt64? = nil, isActive: Bool = false) {
        self.rttMilliseconds = rttMilliseconds
        self.throughput = throughput
        self.isActive = isActive
    }

    /// One view of a link from both of its ends: both measure the same path, so the result is the
    /// conservative one (the longer round trip, the lower throughput), and the link is active if
    /// either end sends on it. Symmetric, so every peer merges two reports to the same edge.
    func merged(with other: LinkQuality) -> LinkQuality {
        LinkQuality(
            rttMilliseconds: Self.combine(rttMilliseconds, other.rttMilliseconds, max),
            throughput: Self.combine(throughput, other.throughput, min),
            isActive: isActive || other.isActive
        )
    }

    private static func combine<T>(_ a: T?, _ b: T?, _ both: (T, T) -> T) -> T? {
        switch (a, b) {
        case let (a?, b?): return both(a, b)
        case let (a?, nil): return a
        case let (nil, b): return b
        }
    }

    public var description: String {
        let rtt = rttMilliseconds.map { "\($0) ms" } ?? "rtt unknown"
        let rate = throughput.map { "\($0) B/s" } ?? "throughput unknown"
        return "\(rtt), \(rate)\(isActive ? ", active" : "")"
    }
}
