/// A clock reading together with the site that took it: unique per write, and totally ordered
/// (time first, then site), which is the last-writer-wins order.
public struct Stamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var time: Timestamp
    public var site: SiteID

    public init(time: Timestamp, site: SiteID) {
        self.time = time
        self.site = site
    }

    public static func < (lhs: Stamp, rhs: Stamp) -> Bool {
        lhs.time != rhs.time ? lhs.time < rhs.time : lhs.site < rhs.site
    }

    public var description: String { "\(time)@\(site)" }
}

/// The stamps of one mutation: `order` places it in last-writer-wins order; `event` says when
/// it happened, for version vectors and sync. They differ only for default data, which is
/// ordered at time zero but still happens now.
public struct WriteStamp: Sendable, Hashable {
    public var order: Stamp
    public var event: Stamp

    public init(order: Stamp, event: Stamp) {
        self.order = order
        self.event = event
    }

    /// An ordinary write, ordered when it happens.
    public init(_ stamp: Stamp) {
        order = stamp
        event = stamp
    }

    /// Default data: ordered before every real write, happening at `event`.
    public static func defaultData(_ event: Stamp) -> WriteStamp {
        WriteStamp(order: Stamp(time: .zero, site: event.site), event: event)
    }
}
