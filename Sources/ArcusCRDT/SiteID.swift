/// Identifies one replica of the store: random, 64 bits, never zero, stable for the life of a
/// data directory. Ties between writes at the same clock reading are broken by site id.
public struct SiteID: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible {
    public var rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// A fresh random site id.
    public static func random() -> SiteID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> SiteID {
        SiteID(UInt64.random(in: 1...UInt64.max, using: &generator))
    }

    public static func < (lhs: SiteID, rhs: SiteID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Sixteen hex digits.
    public var description: String {
        let hex = String(rawValue, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
