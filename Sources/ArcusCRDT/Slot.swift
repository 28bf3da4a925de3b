/// What one field of a map holds: up to one register, one map and one counter at once.
///
/// Normally a single component is live. Two replicas that write different types to the same
/// field concurrently (a map on one, an array on the other) each leave their component live;
/// the state keeps both, and every replica shows the same one: the component with the latest
/// live stamp (on a tie: map, then counter, then register). The choice is a function of the
/// state alone, so replicas never flip it back and forth.
public struct Slot: Sendable, Hashable {
    // Stored, not computed: traversals project `slot.map!.fields` in place instead of copying.
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

    /// Whether any component is live; cheaper than `liveOrder` (it stops at the first).
    public var isLive: Bool {
        if register?.isRemoved == false { return true }
        if counter?.isLive == true { return true }
        return map?.isLive ?? false
    }

    /// The component shown to readers, with the stamp that makes it win; nil when nothing is live.
    public var visibleComponent: (component: Component, order: Stamp)? {
        var best: (component: Component, order: Stamp)?
        if let order = register?.liveOrder { best = (.register, order) }
        if let order = counter?.liveOrder, best == nil || best!.order < order { best = (.counter, order) }
        if let order = map?.liveOrder, best == nil || best!.order <= order { best = (.map, order) }
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
        if other.register != nil { register = Entry.joined(register, other.register) }
        if other.map != nil {
            if map == nil { map = other.map } else { map!.join(other.map!) }
        }
        if other.counter != nil {
            if counter == nil { counter = other.counter } else { counter!.join(other.counter!) }
        }
    }

    /// A delta that removes every live component, recorded as made by `event`; nil when
    /// nothing here is live.
    public func removal(by event: Stamp) -> Slot? {
        var delta = Slot()
        if let r = register, !r.isRemoved { delta.register = r.removed(by: event) }
        delta.map = map?.removal(by: event)
        if counter?.isLive == true { delta.counter = counter!.removal(by: event) }
        return delta.isEmpty ? nil : delta
    }

    /// The part of this slot made by events that `version` does not cover.
    public func changes(since version: VersionVector) -> Slot? {
        var delta = Slot()
        if let r = register, !version.contains(r.event) { delta.register = r }
        delta.map = map?.changes(since: version)
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
        if let event = register?.event { body(event) }
        map?.forEachEvent(body)
        counter?.forEachEvent(body)
    }
}
