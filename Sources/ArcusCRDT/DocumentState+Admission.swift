/// What a receiver takes of a delta it cannot fully trust.
///
/// A delta is a set of cells, each made by one site's event, and a version vector saying which
/// events its sender has seen. A receiver that may accept only some writers' events (those whose
/// credentials allow the write, relayed by a peer allowed to relay) and only times its clock can
/// take in (a time far ahead would win every last-writer-wins comparison forever) keeps the cells
/// it accepts and drops the rest. Any subset of a delta's cells is itself a delta — as if the
/// dropped events had not arrived yet — so joining the part keeps every replica convergent, and
/// the dropped events can still come later from someone the receiver trusts for them.
///
/// The version vector must then not claim what was dropped, or no one would send it again: its
/// entries for sites not admitted are removed, and the others are lowered below the site's
/// earliest refused event and to at most `latest`. A site with an event refused for its time (or
/// claimed beyond `latest`) is claimed only as far as its latest event kept: such a site's store
/// re-stamps its own poisoned writes below the bound when it recovers (see `repairingClock`),
/// and a claim reaching up to `latest` would keep those from ever being sent here.
extension DocumentState {
    public struct Admission: Sendable {
        /// The part of the delta the receiver takes (empty when nothing was admitted).
        public var admitted: DocumentState
        /// Per site, the earliest event refused; empty when the whole delta was admitted.
        public var refused: VersionVector
        /// Whether any event (or version entry) was refused for being later than `latest`.
        public var refusedForTime: Bool

        /// Whether the whole delta was admitted unchanged.
        public var isWhole: Bool { refused.isEmpty && !refusedForTime }
    }

    /// The cells whose event a site `admits` made, whose stamps (event and, for removals, the
    /// order of the value removed) are no later than `latest`; see the type's comment.
    public func admitting(sites admits: (SiteID) -> Bool, through latest: Timestamp) -> Admission {
        var earliestRefused: [SiteID: Timestamp] = [:]
        var refusedForTime = false
        var lateSites = Set<SiteID>()
        // A removal keeps the order of the value it removed: one ordered beyond `latest` would
        // keep every later write to the field removed, so its time counts as much as the event's.
        func accepts(_ cell: Cell) -> Bool {
            if cell.kind == .field { return true }
            let site = cell.event.site
            let tooLate = cell.event.time > latest || cell.order.time > latest
            guard tooLate || !admits(site) else { return true }
            if tooLate {
                refusedForTime = true
                lateSites.insert(site)
            }
            if let seen = earliestRefused[site], seen <= cell.event.time { return false }
            earliestRefused[site] = cell.event.time
            return false
        }
        // The common case, every cell accepted, costs one scan and no copy.
        if cells.allSatisfy(accepts), version.elements.allSatisfy({ admits($0.site) && $0.time <= latest }) {
            return Admission(admitted: self, refused: VersionVector(), refusedForTime: false)
        }
        earliestRefused = [:]
        refusedForTime = false
        lateSites = []
        var part = DocumentState()
        part.names = names
        part.values = values
        part.attachments = attachments
        part.cells.reserveCapacity(cells.count)
        _ = filter(cells.indices, depth: 0, into: &part.cells, keep: accepts)
        var kept = VersionVector()
        let held = part.eventVersion
        for element in version.elements where admits(element.site) {
            var time = min(element.time, latest)
            if element.time > latest {
                refusedForTime = true
                lateSites.insert(element.site)
            }
            if let refused = earliestRefused[element.site] {
                guard refused.rawValue > 0 else { continue }
                time = min(time, Timestamp(rawValue: refused.rawValue - 1))
            }
            if lateSites.contains(element.site) {
                guard let heldTime = held[element.site] else { continue }
                time = min(time, heldTime)
            }
            kept.observe(Stamp(time: time, site: element.site))
        }
        part.version = kept
        for element in version.elements where !admits(element.site) && earliestRefused[element.site] == nil {
            earliestRefused[element.site] = element.time
        }
        return Admission(admitted: part, refused: VersionVector(earliestRefused), refusedForTime: refusedForTime)
    }
}
