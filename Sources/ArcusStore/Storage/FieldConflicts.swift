import ArcusCRDT
import Foundation
import GRDB

/// The conflict view: values of last-writer-wins fields that lost a merge to a write made
/// without having seen them, kept (at most `Store.Options.conflictsPerField` per field, the
/// latest) in the `field_conflict` table and read with `conflicts(path)` and `system:conflicts`.
///
/// What counts as concurrent (see Docs/Conflicts.md): a merge resolves a field's register
/// between the local value and an incoming one written by another site, and
/// - the incoming value loses, and this replica had not seen it before (its document's version
///   did not cover it): whoever wrote the local winner had not seen it either, or the winner
///   would have come with a version that covers it;
/// - the incoming value wins, and the version it came with (what its sender had seen, see
///   `Store.conflictKnowledge`) does not cover the local value.
/// A local write to a field clears its kept losers (it is causally after everything here); a
/// merged write to a field clears the kept losers that the version it came with covers.
enum FieldConflicts {
    /// What one merge decided about one document.
    struct Judgement {
        /// Values that lost to a write that had not seen them, with their field's path.
        var losers: [(path: FieldPath, entry: Entry)] = []
        /// Fields whose register the incoming side won, with what its sender had seen: kept
        /// losers it covers are superseded.
        var overwritten: [FieldPath] = []
        /// A site whose values the incoming writes are taken to have seen (see `judge`).
        var seenInFull: SiteID? = nil

        var isEmpty: Bool { losers.isEmpty && overwritten.isEmpty }
    }

    /// Judges merging `incoming`, whose sender had seen `seen`, into `before`.
    /// The writer of the incoming values is taken to have seen every value of `seenInFull`'s
    /// (this store's, when the sender did not say what it had seen of them).
    static func judge(before: DocumentState, incoming: DocumentState, seen: VersionVector, seenInFull: SiteID? = nil) -> Judgement {
        var judgement = Judgement(seenInFull: seenInFull)
        guard !before.isEmpty else { return judgement }
        incoming.forEachRegister { path, theirs in
            guard let ours = before.register(at: path), ours != theirs else { return }
            if ours.precedes(theirs) {
                judgement.overwritten.append(path)
                if isValue(ours), isValue(theirs), ours.order.site != theirs.order.site,
                   ours.event.site != seenInFull, !seen.contains(ours.event) {
                    judgement.losers.append((path, ours))
                }
            } else if isValue(ours), isValue(theirs), ours.order.site != theirs.order.site, !before.version.contains(theirs.event) {
                judgement.losers.append((path, theirs))
            }
        }
        return judgement
    }

    /// A live value written by a real write: default data (ordered at time zero) loses by design.
    private static func isValue(_ entry: Entry) -> Bool {
        guard entry.order.time != .zero else { return false }
        switch entry.payload {
        case .value, .attachment: return true
        case .present, .removed: return false
        }
    }

    /// One kept loser as `ConflictIndex` holds it: its field's path (storage form) and stamp.
    struct KeptLoser: Hashable, Sendable {
        var path: String
        var stamp: Stamp
    }

    /// Applies a merge's judgement to `kept`, the kept losers of `key`: drops those the sender
    /// had seen in the fields it overwrote, then keeps the new losers, at most `bound` per field
    /// (the latest by stamp). Decided in memory; only the rows that change are written, each
    /// statement prepared once per connection. Returns what the document keeps now.
    static func apply(_ judgement: Judgement, to kept: [KeptLoser], of key: DocumentKey, seen: VersionVector, bound: Int,
                      _ db: Database) throws -> [KeptLoser] {
        var kept = kept
        if !kept.isEmpty, !judgement.overwritten.isEmpty {
            let overwritten = Set(judgement.overwritten.map(storageKey))
            let superseded = kept.filter {
                overwritten.contains($0.path) && (seen.contains($0.stamp) || $0.stamp.site == judgement.seenInFull)
            }
            try delete(superseded, of: key, db)
            kept.removeAll { superseded.contains($0) }
        }
        guard bound > 0 else { return kept }
        for (path, entry) in judgement.losers {
            let loser = KeptLoser(path: storageKey(path), stamp: entry.order)
            guard !kept.contains(loser) else { continue }
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO field_conflict (collection, id, path, time, site, value) VALUES (?, ?, ?, ?, ?, ?)")
                .execute(arguments: [key.collection, key.storageID, loser.path, Int64(bitPattern: loser.stamp.time.rawValue),
                                     Int64(bitPattern: loser.stamp.site.rawValue), value(of: entry).jsonString])
            kept.append(loser)
            let field = kept.filter { $0.path == loser.path }
                .sorted { ($0.stamp.time.rawValue, $0.stamp.site.rawValue) > ($1.stamp.time.rawValue, $1.stamp.site.rawValue) }
            guard field.count > bound else { continue }
            let dropped = Array(field[bound...])
            try delete(dropped, of: key, db)
            kept.removeAll { dropped.contains($0) }
        }
        return kept
    }

    /// Drops from `kept` (the kept losers of `key`) those of the fields a local write wrote: it
    /// had seen them all. Returns what the document keeps now.
    static func clear(_ paths: [FieldPath], from kept: [KeptLoser], of key: DocumentKey, _ db: Database) throws -> [KeptLoser] {
        let written = Set(paths.map(storageKey))
        let cleared = kept.filter { written.contains($0.path) }
        try delete(cleared, of: key, db)
        return kept.filter { !written.contains($0.path) }
    }

    private static func delete(_ losers: [KeptLoser], of key: DocumentKey, _ db: Database) throws {
        for loser in losers {
            try db.cachedStatement(sql: "DELETE FROM field_conflict WHERE collection = ? AND id = ? AND path = ? AND time = ? AND site = ?")
                .execute(arguments: [key.collection, key.storageID, loser.path,
                                     Int64(bitPattern: loser.stamp.time.rawValue), Int64(bitPattern: loser.stamp.site.rawValue)])
        }
    }

    /// Drops every kept loser of the document (evicted: the store keeps nothing of it).
    static func clearDocument(_ key: DocumentKey, _ db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM field_conflict WHERE collection = ? AND id = ?").execute(arguments: [key.collection, key.storageID])
    }

    /// Per site, the earliest of `kept`: what the current winners' writers had not seen.
    static func earliestLosers(_ kept: [KeptLoser]) -> [SiteID: Timestamp] {
        var earliest: [SiteID: Timestamp] = [:]
        for loser in kept where earliest[loser.stamp.site].map({ loser.stamp.time < $0 }) ?? true {
            earliest[loser.stamp.site] = loser.stamp.time
        }
        return earliest
    }

    // MARK: - Reading

    /// One kept loser, as readers see it.
    struct Kept {
        var collection: String
        var id: Value
        var path: FieldPath
        var stamp: Stamp
        var value: Value

        /// `{"value": …, "site": "<16 hex digits>", "written_at": "<ISO 8601, UTC, ms>"}`.
        var object: [String: Value] {
            ["value": value, "site": .string(stamp.site.description), "written_at": .string(FieldConflicts.writtenAt(stamp.time))]
        }
    }

    /// The kept losers of `collection` (every collection when nil), oldest first per field.
    static func kept(in collection: String?, _ db: Database) throws -> [Kept] {
        let filter = collection == nil ? "" : "WHERE collection = ?"
        let rows = try Row.fetchAll(db, sql: "SELECT collection, id, path, time, site, value FROM field_conflict \(filter) ORDER BY collection, id, path, time, site",
                                    arguments: StatementArguments(collection.map { [$0] } ?? []))
        return try rows.map { row in
            Kept(collection: row[0], id: try Value(json: row[1] as String), path: try path(fromStorageKey: row[2]),
                 stamp: stamp(time: row[3], site: row[4]), value: try Value(json: row[5] as String))
        }
    }

    /// What `conflicts(path)` reads for the documents of `collection` (nothing for none).
    static func view(of collection: String?, _ db: Database) throws -> ConflictView {
        var view = ConflictView()
        guard let collection else { return view }
        for kept in try kept(in: collection, db) { view.add(.object(kept.object), of: kept.id, at: kept.path) }
        return view
    }

    /// The rows of `system:conflicts`: one per kept loser.
    static func systemRows(_ db: Database) throws -> [Value] {
        try kept(in: nil, db).map { kept in
            var row = kept.object
            row["collection"] = .string(kept.collection)
            row["document_id"] = kept.id
            row["path"] = .string(kept.path.description)
            row["_id"] = .string("\(kept.collection)/\(kept.id.jsonString)/\(kept.path)/\(kept.stamp.site)/\(kept.stamp.time.rawValue)")
            return .object(row)
        }
    }

    /// An HLC reading's milliseconds as an ISO 8601 instant in UTC, e.g. `2026-03-04T10:00:00.250Z`.
    static func writtenAt(_ time: Timestamp) -> String {
        Date(timeIntervalSince1970: Double(time.milliseconds) / 1000)
            .formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    // MARK: - Storage forms

    /// A path as stored: the JSON array of its names (names may hold dots).
    static func storageKey(_ path: FieldPath) -> String {
        Value.array(path.components.map { .string($0) }).jsonString
    }

    private static func path(fromStorageKey text: String) throws -> FieldPath {
        guard case .array(let names) = try Value(json: text) else { return FieldPath([]) }
        return FieldPath(names.compactMap(\.stringValue))
    }

    /// Times and sites are stored as the Int64 with the same bits (SQLite integers are signed).
    static func stamp(time: Int64, site: Int64) -> Stamp {
        Stamp(time: Timestamp(rawValue: UInt64(bitPattern: time)), site: SiteID(UInt64(bitPattern: site)))
    }

    private static func value(of entry: Entry) -> Value {
        switch entry.payload {
        case .value(let value): return value
        case .attachment(let token): return token.value
        case .present, .removed: return .null
        }
    }
}
