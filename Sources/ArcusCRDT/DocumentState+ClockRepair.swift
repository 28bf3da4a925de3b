/// Repairing a document that took in events stamped far ahead (a clock poisoned before remote
/// times were bounded).
///
/// Such an event wins every last-writer-wins comparison until the real time catches up — for a
/// time near 2^64, never — and a replica whose clock took it in stamped its own later writes
/// beyond it too. Repair keeps what is sane and re-does what this replica itself did:
///
/// - cells of other sites stamped beyond the bound are dropped (each of those sites repairs its
///   own writes when it recovers; keeping or re-doing them here would count them twice);
/// - cells of this site so stamped (or stamped at time zero, where a wrapped clock put them) are
///   kept with fresh stamps from the now sane clock, in their old order, so that each of this
///   replica's writes happens again: a value set again, a removal done again, a counter's
///   cumulative contribution (what this site added) made again. Fresh stamps order after every
///   sane event, as the old ones did, so what readers see changes only where another site's
///   poisoned write stood.
///
/// A removal remembers the order of what it removed. Where that order is beyond the bound (a
/// poisoned value, which is gone), the re-done removal is ordered at its own fresh time: it
/// removes what was written before it, like a removal made now by someone who saw everything.
extension DocumentState {
    public struct ClockRepair: Sendable {
        /// The repaired state.
        public var state: DocumentState
        /// This site's re-stamped cells as a delta (to be logged and sent like a local write),
        /// or nil when there were none.
        public var reapplied: DocumentState?
        /// How many cells of other sites were dropped, and how many of this site's re-stamped.
        public var droppedCount: Int
        public var reappliedCount: Int
        /// The fields whose cells changed, dotted; the document itself (its presence) is "".
        public var fields: [String]
        /// Sites whose version entry was lowered.
        public var sitesLowered: Set<SiteID>
    }

    /// Whether any cell or version entry is stamped later than `latest`.
    public func hasTimes(after latest: Timestamp) -> Bool {
        version.maxTime > latest || cells.contains { $0.kind != .field && ($0.event.time > latest || $0.order.time > latest) }
    }

    /// The repair of this state for a replica whose site is `site` and whose bound is `latest`;
    /// nil when nothing needs it. `fresh` gives a new reading of the replica's clock for each of
    /// its re-stamped writes, each later than every event the state keeps and than the one
    /// before (a sane clock restarted above every event the store keeps does).
    public func repairingClock(through latest: Timestamp, site: SiteID, fresh: () throws -> Timestamp) rethrows -> ClockRepair? {
        func poisoned(_ cell: Cell) -> Bool {
            cell.kind != .field && (cell.event.time > latest || cell.order.time > latest || (cell.event.site == site && cell.event.time == .zero))
        }
        guard version.maxTime > latest || cells.contains(where: poisoned) else { return nil }

        // This site's stamps to replace, in their old order: events, and orders of this site's
        // values that a kept removal or baseline names.
        var old = Set<Stamp>()
        for cell in cells where poisoned(cell) && cell.event.site == site {
            old.insert(cell.event)
            if cell.order.site == site && cell.order.time > latest { old.insert(cell.order) }
        }
        var renewed: [Stamp: Stamp] = [:]
        for stamp in old.sorted() { renewed[stamp] = Stamp(time: try fresh(), site: site) }
        let made = Set(renewed.values)

        var repaired = self
        var dropped = 0, reapplied = 0
        var poisonedSites = Set<SiteID>()
        var fields = Set<String>()
        var path: [String] = []
        for i in cells.indices {
            let cell = cells[i]
            if cell.kind == .field {
                path = Array(path.prefix(Int(cell.depth))) + [names[Int(cell.index)]]
                continue
            }
            guard poisoned(cell) else { continue }
            poisonedSites.insert(cell.event.site)
            // A map's marker belongs to the field the map is in; the root's to the document.
            let depth = cell.kind == .marker ? Int(cell.depth) : Int(cell.depth) + 1
            fields.insert(path.prefix(depth).joined(separator: "."))
            guard cell.event.site == site, let event = renewed[cell.event] else {
                dropped += 1
                continue
            }
            var restamped = cell
            restamped.event = event
            if cell.order.time > latest {
                // A baseline's order names whose contribution it removes: its site must stay.
                restamped.order = renewed[cell.order] ?? Stamp(time: event.time, site: cell.order.site)
            } else if cell.order == cell.event {
                restamped.order = event
            }
            repaired.cells[i] = restamped
            reapplied += 1
        }
        // Drop the other sites' poisoned cells (the re-stamped ones are sane now).
        var kept: [Cell] = []
        kept.reserveCapacity(cells.count)
        _ = repaired.filter(repaired.cells.indices, depth: 0, into: &kept) { !poisoned($0) || made.contains($0.event) }
        repaired.cells = kept

        // Claim of each site touched no more than the state now holds of it: a site that
        // re-stamps its own poisoned writes makes events below the bound again, and a claim up
        // to the bound would keep them from ever being sent here.
        let held = repaired.eventVersion
        var version = VersionVector()
        var lowered = Set<SiteID>()
        for element in self.version.elements {
            var time = element.time
            if time > latest || poisonedSites.contains(element.site) {
                guard let heldTime = held[element.site] else {
                    lowered.insert(element.site)
                    continue
                }
                if heldTime < time { lowered.insert(element.site) }
                time = Swift.min(time, heldTime)
            }
            version.observe(Stamp(time: time, site: element.site))
        }
        for stamp in renewed.values { version.observe(stamp) }
        repaired.version = version

        var delta: DocumentState?
        if !renewed.isEmpty {
            var part = DocumentState(version: VersionVector(renewed.values.max()!))
            part.names = names
            part.values = values
            part.attachments = attachments
            _ = repaired.filter(repaired.cells.indices, depth: 0, into: &part.cells) { made.contains($0.event) }
            delta = part
        }
        return ClockRepair(state: repaired, reapplied: delta, droppedCount: dropped, reappliedCount: reapplied,
                           fields: fields.sorted(), sitesLowered: lowered)
    }
}
