/// A hybrid logical clock reading: milliseconds since the Unix epoch in the high 48 bits and a
/// logical counter in the low 16, so readings order as plain integers.
///
/// `Timestamp.zero` is reserved for default data (`insertDefaultIfAbsent`): every real write
/// orders after it. `Timestamp.max` is the last reading there is: a clock that gets there has no
/// later one to give (see `HybridLogicalClock.tick`).
public struct Timestamp: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    public var rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// `milliseconds` must be at most `Timestamp.maxMilliseconds`; higher bits are lost.
    public init(milliseconds: UInt64, logical: UInt16 = 0) {
        rawValue = (milliseconds << 16) | UInt64(logical)
    }

    /// The reading for `milliseconds`, or for `maxMilliseconds` when it is later than that: for
    /// times read from a clock or computed, which must never wrap round to the past.
    public init(clampingMilliseconds milliseconds: UInt64) {
        self.init(milliseconds: Swift.min(milliseconds, Self.maxMilliseconds))
    }

    public static let zero = Timestamp(rawValue: 0)
    public static let max = Timestamp(rawValue: .max)
    /// The latest millisecond a reading holds: 2^48 − 1, in the year 10889.
    public static let maxMilliseconds: UInt64 = (1 << 48) - 1

    public var milliseconds: UInt64 { rawValue >> 16 }
    public var logical: UInt16 { UInt16(truncatingIfNeeded: rawValue) }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "\(milliseconds).\(logical)" }
}
