import ArcusCRDT
import GRDB

/// What opening a store did about events stamped beyond its bound (`latestAdmissibleTime`):
/// a clock poisoned before remote times were bounded, by a peer whose clock was far ahead or
/// that lied about the time.
///
/// Such a store held events that win every last-writer-wins comparison, and a clock restarted
/// above them, so every later local write was stamped beyond them too (or wrapped round to
/// zero and lost everything). Opening it:
///
/// - drops the poisoned cells of every document that held some, and lowers what the document
///   claims of the sites concerned to what it still holds of them
///   (`DocumentState.repairingClock`);
/// - re-applies this store's own writes among them as fresh local writes, stamped by a clock
///   restarted below the bound, so that no data of this device is lost: they are logged and
///   sync sends them like any write. Other sites' poisoned writes are not re-applied here: each
///   site re-applies its own when it recovers, so nothing is counted twice;
/// - lowers the store's version vector (`site_version`) the same way, and restarts the clock
///   above every event it keeps, all of them within the bound.
///
/// Every document is read once to find them when an older store is first opened (a store made
/// since is checked as it merges, and never holds any), and again whenever the store's clock or
/// version vector is found beyond the bound at open.
public struct ClockPoisoningRecovery: Sendable, CustomStringConvertible {
    /// The bound events were held to.
    public var bound: Timestamp
    /// The clock as the store had left it, and as it restarts.
    public var clockBefore: Timestamp
    public var clockAfter: Timestamp
    /// How many documents held poisoned events, and the first of them with the fields
    /// concerned (`collection/_id: field, field`; "" is the document itself).
    public var documentCount: Int
    public var documents: [String]
    /// Other sites' cells dropped, and this store's own cells re-applied.
    public var cellsDropped: Int
    public var cellsReapplied: Int
    /// Sites the store's vector (or a document's) claimed beyond what it now holds; a sync
    /// layer that keeps claims of its own should lower them for these sites too.
    public var sitesLowered: [SiteID]

    /// How many documents `documents` names at most.
    static let documentsListed = 20

    public var description: String {
        let listed = documents.joined(separator: "; ") + (documentCount > documents.count ? "; …" : "")
        return """
            the store held events stamped beyond \(bound) (its clock was at \(clockBefore)): \(documentCount) document(s) \
            repaired (\(listed.isEmpty ? "none" : listed)), \(cellsDropped) cell(s) of other devices dropped, \
            \(cellsReapplied) of this device's re-applied as fresh writes, \(sitesLowered.count) site(s) claimed lower; \
            the clock restarts at \(clockAfter)
            """
    }

    static func isChecked(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT 1 FROM meta WHERE key = 'clock_checked'") ?? false
    }

    static func markChecked(_ db: Database) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO meta (key, value) VALUES ('clock_checked', 1)")
    }
}

extension Store {
    /// At open: repairs what was stamped beyond the bound, if anything (see
    /// `ClockPoisoningRecovery`). `latest` is the latest time the store's vector and recent
    /// documents hold; `scanDocuments` asks for every document to be read (an older store, never
    /// checked).
    func recoverFromClockPoisoning(latest: Timestamp, scanDocuments: Bool) throws -> ClockPoisoningRecovery? {
        let bound = latestAdmissibleTime
        guard scanDocuments || latest > bound else { return nil }
        let site = self.site

        // One pass over every document: which are poisoned, and what each holds within the
        // bound (all of which a repair keeps).
        var poisoned: [DocumentRows.RowID] = []
        var held = VersionVector()
        func wrapped(_ cell: Cell) -> Bool { cell.kind != .field && cell.event.site == site && cell.event.time == .zero }
        try writer.read { db in
            let rows = try Row.fetchCursor(db, sql: "SELECT collection, id, state, json FROM document")
            while let row = try rows.next() {
                let key = DocumentKey(collection: row[0], id: try Value(json: row[1] as String))
                let state = try DocumentRows.decode(row[2], json: row[3], key, site: site)
                if state.hasTimes(after: bound) || state.cells.contains(where: wrapped) {
                    poisoned.append(DocumentRows.RowID(key))
                    for cell in state.cells where cell.kind != .field && cell.event.time <= bound && cell.order.time <= bound {
                        held.observe(cell.event)
                    }
                } else {
                    held.formUnion(state.eventVersion)
                }
            }
        }
        let version = self.version
        guard !poisoned.isEmpty || version.maxTime > bound || latest > bound else {
            try writer.write { try ClockPoisoningRecovery.markChecked($0) }
            return nil
        }

        // The clock restarts above every event kept, so that re-applied writes order after them
        // as they did before.
        let clockBefore = lastTime
        restartClock(at: min(max(held.maxTime, version.elements.filter { $0.time <= bound }.map(\.time).max() ?? .zero), bound))

        var recovery = ClockPoisoningRecovery(bound: bound, clockBefore: clockBefore, clockAfter: .zero, documentCount: 0,
                                              documents: [], cellsDropped: 0, cellsReapplied: 0, sitesLowered: [])
        var lowered = Set<SiteID>()
        var repairedSites = Set<SiteID>()
        try write { tx in
            for row in poisoned {
                guard let state = try tx.load(row),
                      let repair = try state.repairingClock(through: bound, site: site, fresh: { try stamp().time }) else { continue }
                try tx.save(row, state: repair.state, delta: repair.reapplied ?? DocumentState(), wasLive: state.isLive,
                            hadAttachments: !state.attachments.isEmpty)
                held.formUnion(repair.state.eventVersion)
                lowered.formUnion(repair.sitesLowered)
                for cell in state.cells where cell.kind != .field && (cell.event.time > bound || cell.order.time > bound || wrapped(cell)) {
                    repairedSites.insert(cell.event.site)
                }
                recovery.documentCount += 1
                recovery.cellsDropped += repair.droppedCount
                recovery.cellsReapplied += repair.reappliedCount
                if recovery.documents.count < ClockPoisoningRecovery.documentsListed {
                    recovery.documents.append("\(row.key.collection)/\(row.id): \(repair.fields.map { $0.isEmpty ? "\"\"" : $0 }.joined(separator: ", "))")
                }
            }
            // Of each site with poisoned events, or claimed beyond the bound, the store claims
            // only what it holds; the rest of the vector stands.
            var repaired = VersionVector()
            for element in version.elements {
                guard element.time > bound || repairedSites.contains(element.site) else {
                    repaired.observe(Stamp(time: element.time, site: element.site))
                    continue
                }
                lowered.insert(element.site)
                if let time = held[element.site] { repaired.observe(Stamp(time: min(time, element.time), site: element.site)) }
            }
            // Replaced, not raised: the commit adds this transaction's own events to it.
            resetVersion(repaired)
            try SiteVersions.replace(repaired.union(tx.versionAdded), through: changeSequence, tx.db)
            try ClockPoisoningRecovery.markChecked(tx.db)
        }
        recovery.sitesLowered = lowered.sorted()
        recovery.clockAfter = lastTime
        return recovery
    }
}
