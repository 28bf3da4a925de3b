/// A MAP: fields that merge one by one (add-wins), nested to any depth.
///
/// A map is live while its presence marker is live or any of its fields is. The marker lets an
/// empty map exist (`{}`) and is written when a write creates the map; writes into an existing
/// map do not touch it.
public struct MapNode: Sendable, Hashable {
    public var marker: Entry?
    public var fields: [String: Slot]

    public init(marker: Entry? = nil, fields: [String: Slot] = [:]) {
        self.marker = marker
        self.fields = fields
    }

    public var isEmpty: Bool { marker == nil && fields.isEmpty }

    /// The latest live stamp in the map (its marker or any field), nil when removed.
    public var liveOrder: Stamp? {
        var latest = marker?.liveOrder
        for slot in fields.values {
            if let order = slot.liveOrder, latest == nil || latest! < order { latest = order }
        }
        return latest
    }

    /// The visible fields as an object, or nil when the map is not live.
    public var value: Value? {
        var object: [String: Value] = [:]
        object.reserveCapacity(fields.count)
        for (name, slot) in fields {
            if let v = slot.value { object[name] = v }
        }
        if object.isEmpty, marker?.liveOrder == nil { return nil }
        return .object(object)
    }

    public mutating func join(_ other: MapNode) {
        if let m = other.marker { marker = Entry.joined(marker, m) }
        for (name, slot) in other.fields {
            if fields[name] == nil {
                fields[name] = slot
            } else {
                fields[name]!.join(slot)
            }
        }
    }

    /// A delta that removes the marker and every live field, nil when nothing is live.
    public func removal(by event: Stamp) -> MapNode? {
        var delta = MapNode()
        if let m = marker, !m.isRemoved { delta.marker = m.removed(by: event) }
        for (name, slot) in fields {
            if let removal = slot.removal(by: event) { delta.fields[name] = removal }
        }
        return delta.isEmpty ? nil : delta
    }

    public func changes(since version: VersionVector) -> MapNode? {
        var delta = MapNode()
        if let m = marker, !version.contains(m.event) { delta.marker = m }
        for (name, slot) in fields {
            if let changed = slot.changes(since: version) { delta.fields[name] = changed }
        }
        return delta.isEmpty ? nil : delta
    }

    public func forEachEvent(_ body: (Stamp) -> Void) {
        if let m = marker { body(m.event) }
        for slot in fields.values { slot.forEachEvent(body) }
    }
}
