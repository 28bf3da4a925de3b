/// For each site, the latest event of that site seen. Whoever holds `v` has seen every event of
/// site `s` with time ≤ `v[s]` (events of one site are seen in time order), so `v` names a
/// causal context in a few bytes per site.
///
/// Stored as a small array sorted by site: replicas know a handful of sites, and a scan of a
/// few entries is faster than hashing on the paths that check every entry of every document.
public struct VersionVector: Sendable, Hashable, CustomStringConvertible {
    public struct Element: Sendable, Hashable {
        public var site: SiteID
        public var time: Timestamp
    }

    /// Sorted by site, one element per site.
    public private(set) var elements: [Element]

    public init() { elements = [] }

    /// The vector of one event: what a single write's delta has seen.
    public init(_ stamp: Stamp) { elements = [Element(site: stamp.site, time: stamp.time)] }

    public init(_ entries: [SiteID: Timestamp]) {
        elements = entries.map { Element(site: $0.key, time: $0.value) }.sorted { $0.site < $1.site }
    }

    public static let empty = VersionVector()

    public var entries: [SiteID: Timestamp] {
        Dictionary(uniqueKeysWithValues: elements.map { ($0.site, $0.time) })
    }

    @inline(__always)
    private func position(of site: SiteID) -> (index: Int, found: Bool) {
        var i = 0
        let n = elements.count
        while i < n {
            let s = elements[i].site
            if s == site { return (i, true) }
            if s > site { return (i, false) }
            i += 1
        }
        return (n, false)
    }

    public subscript(site: SiteID) -> Timestamp? {
        let (i, found) = position(of: site)
        return found ? elements[i].time : nil
    }

    public var isEmpty: Bool { elements.isEmpty }
    public var count: Int { elements.count }

    /// Whether the event `stamp` is covered by this vector.
    @inline(__always)
    public func contains(_ stamp: Stamp) -> Bool {
        for element in elements where element.site == stamp.site { return stamp.time <= element.time }
        return false
    }

    @inline(__always)
    public mutating func observe(_ stamp: Stamp) {
        let (i, found) = position(of: stamp.site)
        if found {
            if elements[i].time < stamp.time { elements[i].time = stamp.time }
        } else {
            elements.insert(Element(site: stamp.site, time: stamp.time), at: i)
        }
    }

    public mutating func formUnion(_ other: VersionVector) {
        // Into an empty vector: the other's entries as they are, sharing its storage.
        guard !elements.isEmpty else { elements = other.elements; return }
        for element in other.elements { observe(Stamp(time: element.time, site: element.site)) }
    }

    public func union(_ other: VersionVector) -> VersionVector {
        var result = self
        result.formUnion(other)
        return result
    }

    /// Whether every event this vector covers is covered by `other`.
    public func isCovered(by other: VersionVector) -> Bool {
        elements.allSatisfy { other.contains(Stamp(time: $0.time, site: $0.site)) }
    }

    /// The entries of this vector that `other` does not cover.
    public func subtracting(_ other: VersionVector) -> VersionVector {
        var result = VersionVector()
        result.elements = elements.filter { !other.contains(Stamp(time: $0.time, site: $0.site)) }
        return result
    }

    /// Per site, the lower of the two times; sites missing from either are dropped.
    public func intersection(_ other: VersionVector) -> VersionVector {
        var result = VersionVector()
        for element in elements {
            guard let time = other[element.site] else { continue }
            result.observe(Stamp(time: min(time, element.time), site: element.site))
        }
        return result
    }

    /// This vector with `site`'s entry at `time` (removed when nil), whatever it was.
    public func setting(_ site: SiteID, to time: Timestamp?) -> VersionVector {
        var result = self
        let (i, found) = position(of: site)
        switch (found, time) {
        case (true, let time?): result.elements[i].time = time
        case (true, nil): result.elements.remove(at: i)
        case (false, let time?): result.elements.insert(Element(site: site, time: time), at: i)
        case (false, nil): break
        }
        return result
    }

    /// The largest time in the vector.
    public var maxTime: Timestamp { elements.map(\.time).max() ?? .zero }

    public var description: String {
        "[" + elements.map { "\($0.site):\($0.time)" }.joined(separator: ", ") + "]"
    }
}
