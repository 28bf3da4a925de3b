/// One last-writer-wins cell: a field's value, an attachment token, a map's presence marker, or
/// the record that one of these was removed.
///
/// A removal keeps the `order` of what it removed and takes a fresh `event`: only causal
/// metadata, no value. Because it keeps the old order, a write that the remover had not seen
/// and that orders after the removed value survives the removal (add-wins), while anything
/// ordered at or before it stays removed. A write made after the removal was seen orders later
/// (the hybrid clock guarantees it) and so recreates the field.
public struct Entry: Sendable, Hashable {
    public enum Payload: Sendable, Hashable {
        case value(Value)
        // Boxed: tokens are rare and would otherwise widen every entry.
        indirect case attachment(AttachmentToken)
        /// A map exists here (possibly empty).
        case present
        case removed
    }

    public var order: Stamp
    public var event: Stamp
    public var payload: Payload

    public init(order: Stamp, event: Stamp, payload: Payload) {
        self.order = order
        self.event = event
        self.payload = payload
    }

    public init(_ stamp: WriteStamp, _ payload: Payload) {
        order = stamp.order
        event = stamp.event
        self.payload = payload
    }

    @inline(__always)
    public var isRemoved: Bool { if case .removed = payload { return true } else { return false } }

    /// The stamp this entry asserts its place with, or nil once removed.
    @inline(__always)
    public var liveOrder: Stamp? { isRemoved ? nil : order }

    /// The same cell, removed by the event `event`.
    public func removed(by event: Stamp) -> Entry {
        Entry(order: order, event: event, payload: .removed)
    }

    /// The join order: `order` first; at equal order a removal beats the value it removed;
    /// then the later event. Joining two entries keeps the greater.
    @inline(__always)
    public func precedes(_ other: Entry) -> Bool {
        if order != other.order { return order < other.order }
        let a = isRemoved, b = other.isRemoved
        if a != b { return b }
        return event < other.event
    }

    @inline(__always)
    public static func joined(_ a: Entry?, _ b: Entry?) -> Entry? {
        guard let a else { return b }
        guard let b else { return a }
        return a.precedes(b) ? b : a
    }
}
