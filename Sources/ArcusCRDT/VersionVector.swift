/// For each site, the latest event of that site seen. Whoever holds `v` has seen every event of
/// site `s` with time ≤ `v[s]` (events of one site are seen in time order), so `v` names a
/// causal context in a few bytes per site.
public struct VersionVector: Sendable, Hashable, CustomStringConvertible {
    public private(set) var entries: [SiteID: Timestamp]

    public init(_ entries: [SiteID: Timestamp] = [:]) { self.entries = entries }

    public static let empty = VersionVector()

    public subscript(site: SiteID) -> Timestamp? { entries[site] }

    public var isEmpty: Bool { entries.isEmpty }
    public var count: Int { entries.count }

    /// Whether the event `stamp` is covered by this vector.
    @inline(__always)
    public func contains(_ stamp: Stamp) -> Bool {
        guard let seen = entries[stamp.site] else { return false }
        return stamp.time <= seen
    }

    public mutating func observe(_ stamp: Stamp) {
        if let seen = entries[stamp.site], seen >= stamp.time { return }
        entries[stamp.site] = stamp.time
    }

    public mutating func formUnion(_ other: VersionVector) {
        for (site, time) in other.entries { observe(Stamp(time: time, site: site)) }
    }

    public func union(_ other: VersionVector) -> VersionVector {
        var result = self
        result.formUnion(other)
        return result
    }

    /// Whether every event this vector covers is covered by `other`.
    public func isCovered(by other: VersionVector) -> Bool {
        entries.allSatisfy { site, time in (other.entries[site].map { $0 >= time }) ?? false }
    }

    /// The entries of this vector that `other` does not cover.
    public func subtracting(_ other: VersionVector) -> VersionVector {
        VersionVector(entries.filter { site, time in !other.contains(Stamp(time: time, site: site)) })
    }

    /// The largest time in the vector.
    public var maxTime: Timestamp { entries.values.max() ?? .zero }

    public var description: String {
        "[" + entries.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ", ") + "]"
    }
}
