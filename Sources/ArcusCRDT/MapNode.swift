/// A MAP: fields that merge one by one (add-wins), nested to any depth.
///
/// A map is live while its presence marker is live or any of its fields is. The marker lets an
/// empty map exist (`{}`) and is written when a write creates the map; writes into an existing
/// map do not touch it.
public struct MapNode: Sendable, Hashable {
    public var marker: Entry?
    public var fields: FieldList

    public init(marker: Entry? = nil, fields: FieldList = [:]) {
        self.marker = marker
        self.fields = fields
    }

    public var isEmpty: Bool { marker == nil && fields.isEmpty }

    /// The latest live stamp in the map (its marker or any field), nil when removed.
    public var liveOrder: Stamp? {
        var latest = marker?.liveOrder
        for i in fields.elements.indices {
            if let order = fields.elements[i].slot.liveOrder, latest == nil || latest! < order { latest = order }
        }
        return latest
    }

    /// Whether the marker or any field is live; stops at the first live one.
    public var isLive: Bool {
        if let m = marker, !m.isRemoved { return true }
        for i in fields.elements.indices where fields.elements[i].slot.isLive { return true }
        return false
    }

    /// The visible fields as an object, or nil when the map is not live.
    public var value: Value? {
        var object: [String: Value] = [:]
        object.reserveCapacity(fields.count)
        for i in fields.elements.indices {
            if let v = fields.elements[i].slot.value { object[fields.elements[i].name] = v }
        }
        if object.isEmpty, marker?.liveOrder == nil { return nil }
        return .object(object)
    }

    public mutating func join(_ other: MapNode) {
        if let m = other.marker { marker = Entry.joined(marker, m) }
        for i in other.fields.elements.indices {
            fields[other.fields.elements[i].name, default: Slot()].join(other.fields.elements[i].slot)
        }
    }

    /// A delta that removes the marker and every live field, nil when nothing is live.
    public func removal(by event: Stamp) -> MapNode? {
        var delta = MapNode()
        if let m = marker, !m.isRemoved { delta.marker = m.removed(by: event) }
        for i in fields.elements.indices {
            if let removal = fields.elements[i].slot.removal(by: event) { _ = delta.fields.appendInOrder(fields.elements[i].name, removal) }
        }
        return delta.isEmpty ? nil : delta
    }

    public func changes(since version: VersionVector) -> MapNode? {
        var delta = MapNode()
        if let m = marker, !version.contains(m.event) { delta.marker = m }
        for i in fields.elements.indices {
            if let changed = fields.elements[i].slot.changes(since: version) { _ = delta.fields.appendInOrder(fields.elements[i].name, changed) }
        }
        return delta.isEmpty ? nil : delta
    }

    public func forEachEvent(_ body: (Stamp) -> Void) {
        if let m = marker { body(m.event) }
        for i in fields.elements.indices { fields.elements[i].slot.forEachEvent(body) }
    }
}
