/// A hybrid logical clock reading: milliseconds since the Unix epoch in the high 48 bits and a
/// logical counter in the low 16, so readings order as plain integers.
///
/// `Timestamp.zero` is reserved for default data (`insertDefaultIfAbsent`): every real write
/// orders after it.
public struct Timestamp: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    public var rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public init(milliseconds: UInt64, logical: UInt16 = 0) {
        rawValue = (milliseconds << 16) | UInt64(logical)
    }

    public static let zero = Timestamp(rawValue: 0)

    public var milliseconds: UInt64 { rawValue >> 16 }
    public var logical: UInt16 { UInt16(truncatingIfNeeded: rawValue) }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String { "\(milliseconds).\(logical)" }
}
