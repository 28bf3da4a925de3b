import ArcusCRDT
import ArcusCodec
import GRDB

/// Reaping tombstones without bringing deleted documents back.
///
/// A removed document keeps a tombstone (its removal markers and the version of every event it
/// saw) so that old copies of its fields, arriving later, stay dead. Kept forever, tombstones
/// grow the store under a delete-heavy load. Reaped, they open Ditto's hole: a peer away longer
/// than the tombstone's lifetime still holds the fields, and sends them back.
///
/// So a store that reaps a tombstone raises its *reaped horizon* for the collection: the union
/// of the versions of every tombstone it reaped there. It reaps only tombstones whose events it
/// knows it has seen in full (`known`: every document with those events reached it), so an
/// event under the horizon belongs to a document it holds, or held and reaped. From then on a
/// merged cell whose event is under the horizon is dropped (unless the document is withheld,
/// being fetched back after an eviction): it is a copy of a reaped document's old state, or a
/// cell the store already holds. A write the remover had not seen (an event above the
/// horizon) still arrives, as it would have survived the removal.
///
/// Peers that were away learn the horizon from their server and purge what the server reaped
/// (`purge(_:under:keeping:)`); the sync engine drives both (ArcusSync, Docs/Sync.md "Reaped
/// tombstones").
extension Store {
    /// The sync records holding each collection's reaped horizon: this prefix and the collection.
    static let reapedHorizonPrefix = "reaped-horizon:"

    /// The reaped horizon of `collection`: the union of the versions of the tombstones reaped
    /// there (empty when none was).
    public func reapedHorizon(of collection: String) -> VersionVector {
        reapedHorizonCache.withLock { $0[collection] } ?? VersionVector()
    }

    /// Every collection's reaped horizon.
    public var reapedHorizons: [String: VersionVector] { reapedHorizonCache.withLock { $0 } }

    static func loadReapedHorizons(_ db: Database) throws -> [String: VersionVector] {
        var horizons: [String: VersionVector] = [:]
        for (key, value) in try syncRecords(prefix: reapedHorizonPrefix, db) {
            horizons[String(key.dropFirst(reapedHorizonPrefix.count))] = try ReapedHorizonRecord.decode(value)
        }
        return horizons
    }

    /// How many tombstones one reaping transaction considers: the writer is held for a batch,
    /// not for the whole scan (a delete-heavy store holds hundreds of thousands).
    static let reapBatch = 500

    /// Deletes the tombstones (documents removed, not live) of `collections` whose latest event
    /// is older than `cutoff` and whose version `known` covers, raising each collection's
    /// reaped horizon by their versions. `withheld` documents (fetched back after an eviction)
    /// are left. Returns how many were reaped per collection.
    ///
    /// Tombstones are read a batch at a time outside the writer, then deleted in a transaction
    /// of their own with the horizon they raise; one written meanwhile (its row moved to a later
    /// change-log position) is left for the next pass.
    @discardableResult
    public func reapTombstones(
        olderThan cutoff: Timestamp, known: (String) -> VersionVector?, withheld: Set<DocumentKey> = []
    ) throws -> [String: Int] {
        var reaped: [String: Int] = [:]
        var knownByCollection: [String: VersionVector?] = [:]
        var after: Int64 = 0
        while true {
            let page = try read { db in
                try Row.fetchAll(db, sql: "SELECT seq, collection, id, state, json FROM document WHERE json IS NULL AND seq > ? ORDER BY seq LIMIT ?",
                                 arguments: [after, Self.reapBatch])
            }
            guard let last = page.last else { break }
            after = last[0]
            var doomed: [(seq: Int64, key: DocumentKey, version: VersionVector)] = []
            for row in page {
                let collection: String = row[1]
                let known = knownByCollection[collection] ?? {
                    let found = known(collection)
                    knownByCollection[collection] = found
                    return found
                }()
                guard let known else { continue }
                let key = DocumentKey(collection: collection, id: try Value(json: row[2] as String))
                guard !withheld.contains(key), !isWithheld(key) else { continue }
                let state = try DocumentRows.decode(row[3], json: row[4], key, site: site)
                guard !state.isLive, state.version.maxTime < cutoff, state.version.isCovered(by: known) else { continue }
                doomed.append((row[0], key, state.version))
            }
            guard !doomed.isEmpty else { continue }
            try write { tx in
                var raised: [String: VersionVector] = [:]
                for candidate in doomed where !isWithheld(candidate.key) {
                    try tx.db.cachedStatement(sql: "DELETE FROM document WHERE seq = ? AND json IS NULL").execute(arguments: [candidate.seq])
                    guard tx.connection.changesCount == 1 else { continue }
                    let collection = candidate.key.collection
                    raised[collection, default: reapedHorizon(of: collection)].formUnion(candidate.version)
                    reaped[collection, default: 0] += 1
                }
                for (collection, horizon) in raised {
                    try tx.setSyncRecord(Self.reapedHorizonPrefix + collection, ReapedHorizonRecord.encode(horizon))
                }
                let committed = raised
                tx.afterCommit { [self] in reapedHorizonCache.withLock { $0.merge(committed) { _, new in new } } }
            }
        }
        return reaped
    }

    /// The documents of `collection` (not withheld) with a cell whose event is under `horizon`
    /// but not under this store's own horizon there: those a peer that reaped up to `horizon`
    /// may have reaped. Reads every document of the collection once, in key order.
    public func keys(in collection: String, withEventsUnder horizon: VersionVector) throws -> [DocumentKey] {
        let own = reapedHorizon(of: collection)
        guard !horizon.isCovered(by: own) else { return [] }
        return try read { db in
            var keys: [DocumentKey] = []
            let rows = try Row.fetchCursor(db, sql: "SELECT id, state, json FROM document WHERE collection = ? ORDER BY id", arguments: [collection])
            while let row = try rows.next() {
                let key = DocumentKey(collection: collection, id: try Value(json: row[0] as String))
                guard !isWithheld(key) else { continue }
                let state = try DocumentRows.decode(row[1], json: row[2], key, site: site)
                var under = false
                state.forEachEvent { event in if !under, horizon.contains(event), !own.contains(event) { under = true } }
                if under { keys.append(key) }
            }
            return keys.sorted()
        }
    }

    /// The events of the cells under `horizon` this store holds of each of `keys` (none for a
    /// document it has no row of), in order; withheld documents are `unknown`: what this store
    /// holds of them is not all there is.
    public func heldEvents(of keys: [DocumentKey], under horizon: VersionVector) throws -> (held: [DocumentKey: [Stamp]], unknown: [DocumentKey]) {
        try read { db in
            var held: [DocumentKey: [Stamp]] = [:]
            var unknown: [DocumentKey] = []
            for key in keys {
                guard !isWithheld(key) else {
                    unknown.append(key)
                    continue
                }
                var events = Set<Stamp>()
                if let row = try Row.fetchOne(db, sql: "SELECT state, json FROM document WHERE collection = ? AND id = ?", arguments: [key.collection, key.storageID]) {
                    try DocumentRows.decode(row[0], json: row[1], key, site: site).forEachEvent { if horizon.contains($0) { events.insert($0) } }
                }
                held[key] = events.sorted()
            }
            return (held, unknown)
        }
    }

    /// Brings documents up to a peer's reaped horizon: drops their cells whose events are under
    /// `horizon` but not among those the peer holds of each (`keys`: none when it reaped the
    /// document), which the peer's reaped tombstone removed; a document left with no cells is
    /// deleted. With `raising`, raises this store's horizon for the collection to `horizon`, so
    /// that copies of the dropped cells arriving later stay dropped: only once every document
    /// under it was checked (a check cut short must be made again, and a raised horizon would
    /// pass it over). Returns how many documents changed.
    ///
    /// The caller must hold every document the peer holds with events under `horizon` (its
    /// answer to this store is complete), or the raised horizon would drop them on arrival.
    @discardableResult
    public func purge(_ keys: [DocumentKey: Set<Stamp>], under horizon: VersionVector, collection: String, raising: Bool = true) throws -> Int {
        var purged = 0
        try write { tx in
            for (key, keeping) in keys where key.collection == collection {
                if try tx.purge(key, under: horizon, keeping: keeping) { purged += 1 }
            }
            guard raising else { return }
            let raised = reapedHorizon(of: collection).union(horizon)
            try tx.setSyncRecord(Self.reapedHorizonPrefix + collection, ReapedHorizonRecord.encode(raised))
            tx.afterCommit { [self] in reapedHorizonCache.withLock { $0[collection] = raised } }
        }
        return purged
    }
}

extension WriteTransaction {
    /// Drops the document's cells under `horizon` whose events `keeping` lacks; deletes it if
    /// none is left. Returns whether anything changed.
    func purge(_ key: DocumentKey, under horizon: VersionVector, keeping: Set<Stamp>) throws -> Bool {
        let row = DocumentRows.RowID(key)
        guard !store.isWithheld(key), let state = try load(row) else { return false }
        let kept = state.dropping { horizon.contains($0) && !keeping.contains($0) }
        guard kept.cells.count != state.cells.count else { return false }
        guard !kept.isEmpty else {
            try db.execute(sql: "DELETE FROM document WHERE collection = ? AND id = ?", arguments: [key.collection, row.id])
            try AttachmentReferences.clear(db, key)
            // Readers saw it (or its tombstone): observers hear it is gone, as after a removal.
            recordPurged(key, wasLive: state.isLive)
            return true
        }
        try save(row, state: kept, delta: DocumentState(), wasLive: state.isLive, hadAttachments: !state.attachments.isEmpty, local: false)
        return true
    }

    /// The cells of a merged delta a reaped horizon keeps: none whose event is under the
    /// horizon (see `Store.reapTombstones`), unless the document is withheld.
    func unreaped(_ incoming: DocumentState, of key: DocumentKey) -> DocumentState {
        let horizon = store.reapedHorizon(of: key.collection)
        guard !horizon.isEmpty, !store.isWithheld(key) else { return incoming }
        return incoming.dropping { horizon.contains($0) }
    }
}

/// How a reaped horizon is kept in a sync record: a count, then site and time per entry, as
/// varints.
enum ReapedHorizonRecord {
    static func encode(_ horizon: VersionVector) -> [UInt8] {
        var writer = ByteWriter()
        writer.writeVarint(horizon.elements.count)
        for element in horizon.elements {
            writer.writeVarint(element.site.rawValue)
            writer.writeVarint(element.time.rawValue)
        }
        return writer.bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> VersionVector {
        var reader = ByteReader(bytes)
        let count = try reader.readCount("reaped horizon entries", limit: 1 << 16, minimumItemSize: 2)
        var horizon = VersionVector()
        for _ in 0..<count {
            let site = SiteID(try reader.readVarint())
            horizon.observe(Stamp(time: Timestamp(rawValue: try reader.readVarint()), site: site))
        }
        return horizon
    }
}
