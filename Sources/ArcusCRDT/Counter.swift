/// A COUNTER: every site's increments add up, under any order of delivery.
///
/// Each site keeps one cumulative contribution (its running total and the stamp of its latest
/// increment); joining keeps the later contribution per site. Removing or replacing the counter
/// records, per site, the contribution it saw as a baseline; the counter's value is the sum of
/// what each site added after its baseline. Increments made concurrently with a removal survive.
public struct Counter: Sendable, Hashable {
    public struct Contribution: Sendable, Hashable {
        public var total: Number
        /// The latest increment's stamp; its site is the contributing site.
        public var stamp: Stamp

        public init(total: Number, stamp: Stamp) {
            self.total = total
            self.stamp = stamp
        }
    }

    public struct Baseline: Sendable, Hashable {
        /// The contribution that was removed: its total and its stamp.
        public var total: Number
        public var stamp: Stamp
        /// The removal.
        public var event: Stamp

        public init(total: Number, stamp: Stamp, event: Stamp) {
            self.total = total
            self.stamp = stamp
            self.event = event
        }

        @inline(__always)
        func precedes(_ other: Baseline) -> Bool {
            stamp != other.stamp ? stamp < other.stamp : event < other.event
        }
    }

    public var contributions: [SiteID: Contribution] = [:]
    public var baselines: [SiteID: Baseline] = [:]

    public init(contributions: [SiteID: Contribution] = [:], baselines: [SiteID: Baseline] = [:]) {
        self.contributions = contributions
        self.baselines = baselines
    }

    /// What `site` adds to the counter now.
    public func amount(of site: SiteID) -> Number {
        guard let c = contributions[site] else { return .zero }
        guard let b = baselines[site] else { return c.total }
        return c.stamp > b.stamp ? c.total - b.total : .zero
    }

    public var value: Number {
        var sum = Number.zero
        for site in contributions.keys.sorted() { sum = sum + amount(of: site) }
        return sum
    }

    /// The latest increment not yet removed, or nil when the counter is removed.
    public var liveOrder: Stamp? {
        var latest: Stamp?
        for (site, c) in contributions {
            if let b = baselines[site], b.stamp >= c.stamp { continue }
            if latest == nil || latest! < c.stamp { latest = c.stamp }
        }
        return latest
    }

    public var isLive: Bool { liveOrder != nil }

    public mutating func join(_ other: Counter) {
        for (site, c) in other.contributions {
            if let mine = contributions[site], mine.stamp >= c.stamp { continue }
            contributions[site] = c
        }
        for (site, b) in other.baselines {
            if let mine = baselines[site], !mine.precedes(b) { continue }
            baselines[site] = b
        }
    }

    /// Baselines that remove every live contribution, made by `event`.
    func removal(by event: Stamp) -> Counter {
        var delta = Counter()
        for (site, c) in contributions {
            if let b = baselines[site], b.stamp >= c.stamp { continue }
            delta.baselines[site] = Baseline(total: c.total, stamp: c.stamp, event: event)
        }
        return delta
    }

    /// Every event this counter records.
    func forEachEvent(_ body: (Stamp) -> Void) {
        for c in contributions.values { body(c.stamp) }
        for b in baselines.values { body(b.event) }
    }
}
