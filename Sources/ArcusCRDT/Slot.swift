/// What one field of a map holds: up to one register, one map and one counter at once.
///
/// Normally a single component is live. Two replicas that write different types to the same
/// field concurrently (a map on one, an array on the other) each leave their component live;
/// the state keeps both, and every replica shows the same one: the component with the latest
/// live stamp (on a tie: map, then counter, then register). The choice is a function of the
/// state alone, so replicas never flip it back and forth.
public struct Slot: Sendable, Hashable {
    public var register: Entry?
    public var map: MapNode?
    public var counter: Counter?

    public init(register: Entry? = nil, map: MapNode? = nil, counter: Counter? = nil) {
        self.register = register
        self.map = map
        self.counter = counter
    }

    public var isEmpty: Bool { register == nil && map == nil && counter == nil }

    public enum Component: Int, Sendable, Comparable {
        case register = 0, counter = 1, map = 2
        public static func < (a: Component, b: Component) -> Bool { a.rawValue < b.rawValue }
    }

    /// The component shown to readers, with the stamp that makes it win; nil when nothing is live.
    public var visibleComponent: (component: Component, order: Stamp)? {
        var best: (component: Component, order: Stamp)?
        func consider(_ component: Component, _ order: Stamp?) {
            guard let order else { return }
            if let b = best, (b.order, b.component) > (order, component) { return }
            best = (component, order)
        }
        consider(.register, register?.liveOrder)
        consider(.counter, counter?.liveOrder)
        consider(.map, map?.liveOrder)
        return best
    }

    public var liveOrder: Stamp? { visibleComponent?.order }

    /// The value readers see, or nil when the field is absent.
    public var value: Value? {
        guard let (component, _) = visibleComponent else { return nil }
        switch component {
        case .register:
            switch register!.payload {
            case .value(let v): return v
            case .attachment(let token): return token.value
            case .present, .removed: return nil
            }
        case .counter: return counter!.value.value
        case .map: return map!.value
        }
    }

    public mutating func join(_ other: Slot) {
        if let r = other.register { register = Entry.joined(register, r) }
        if let m = other.map {
            if map == nil { map = m } else { map!.join(m) }
        }
        if let c = other.counter {
            if counter == nil { counter = c } else { counter!.join(c) }
        }
    }

    /// A delta that removes every live component, recorded as made by `event`; nil when
    /// nothing here is live.
    public func removal(by event: Stamp) -> Slot? {
        var delta = Slot()
        if let r = register, !r.isRemoved { delta.register = r.removed(by: event) }
        if let m = map { delta.map = m.removal(by: event) }
        if let c = counter, c.isLive { delta.counter = c.removal(by: event) }
        return delta.isEmpty ? nil : delta
    }

    /// The part of this slot made by events that `version` does not cover.
    public func changes(since version: VersionVector) -> Slot? {
        var delta = Slot()
        if let r = register, !version.contains(r.event) { delta.register = r }
        if let m = map { delta.map = m.changes(since: version) }
        if let c = counter {
            var changed = Counter()
            for (site, contribution) in c.contributions where !version.contains(contribution.stamp) {
                changed.contributions[site] = contribution
            }
            for (site, baseline) in c.baselines where !version.contains(baseline.event) {
                changed.baselines[site] = baseline
            }
            if !changed.contributions.isEmpty || !changed.baselines.isEmpty { delta.counter = changed }
        }
        return delta.isEmpty ? nil : delta
    }

    /// Calls `body` with every event recorded in this slot.
    public func forEachEvent(_ body: (Stamp) -> Void) {
        if let r = register { body(r.event) }
        map?.forEachEvent(body)
        counter?.forEachEvent(body)
    }
}
