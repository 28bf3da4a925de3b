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

        var isEmpty: Bool { losers.isEmpty && overwritten.isEmpty }
    }

    /// Judges merging `incoming`, whose sender had seen `seen`, into `before`.
    static func judge(before: DocumentState, incoming: DocumentState, seen: VersionVector) -> Judgement {
        var judgement = Judgement()
        guard !before.isEmpty else { return judgement }
        incoming.forEachRegister { path, theirs in
            guard let ours = before.register(at: path), ours != theirs else { return }
            if ours.precedes(theirs) {
                judgement.overwritten.append(path)
                if isValue(ours), isValue(theirs), ours.order.site != theirs.order.site, !seen.contains(ours.event) {
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

    /// Records a merge's judgement for `key`: supersedes what the sender had seen, then keeps
    /// the new losers, at most `bound` per field (the latest by stamp).
    static func record(_ judgement: Judgement, for key: DocumentKey, seen: VersionVector, bound: Int, _ db: Database) throws {
        let id = key.storageID
        for path in judgement.overwritten {
            let pathKey = storageKey(path)
            for row in try Row.fetchAll(db, sql: "SELECT time, site FROM field_conflict WHERE collection = ? AND id = ? AND path = ?",
                                        arguments: [key.collection, id, pathKey]) {
                let stamp = stamp(time: row[0], site: row[1])
                guard seen.contains(stamp) else { continue }
                try db.execute(sql: "DELETE FROM field_conflict WHERE collection = ? AND id = ? AND path = ? AND time = ? AND site = ?",
                               arguments: [key.collection, id, pathKey, row[0], row[1]])
            }
        }
        guard bound > 0 else { return }
        for (path, entry) in judgement.losers {
            let pathKey = storageKey(path)
            try db.execute(sql: "INSERT OR IGNORE INTO field_conflict (collection, id, path, time, site, value) VALUES (?, ?, ?, ?, ?, ?)",
                           arguments: [key.collection, id, pathKey, Int64(bitPattern: entry.order.time.rawValue),
                                       Int64(bitPattern: entry.order.site.rawValue), value(of: entry).jsonString])
            try db.execute(sql: """
                DELETE FROM field_conflict WHERE collection = ?1 AND id = ?2 AND path = ?3 AND (time, site) NOT IN
                    (SELECT time, site FROM field_conflict WHERE collection = ?1 AND id = ?2 AND path = ?3 ORDER BY time DESC, site DESC LIMIT ?4)
                """, arguments: [key.collection, id, pathKey, bound])
        }
    }

    /// Drops the kept losers of the fields a local write wrote: it had seen them all.
    static func clear(_ paths: [FieldPath], of key: DocumentKey, _ db: Database) throws {
        for path in paths {
            try db.cachedStatement(sql: "DELETE FROM field_conflict WHERE collection = ? AND id = ? AND path = ?")
                .execute(arguments: [key.collection, key.storageID, storageKey(path)])
        }
    }

    /// Drops every kept loser of the document (evicted: the store keeps nothing of it).
    static func clearDocument(_ key: DocumentKey, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM field_conflict WHERE collection = ? AND id = ?", arguments: [key.collection, key.storageID])
    }

    /// Per site, the earliest kept loser of the document's: what its current winners' writers
    /// had not seen.
    static func earliestLosers(of key: DocumentKey, _ db: Database) throws -> [SiteID: Timestamp] {
        var earliest: [SiteID: Timestamp] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT site, min(time) FROM field_conflict WHERE collection = ? AND id = ? GROUP BY site"),
                                    arguments: [key.collection, key.storageID]) {
            let stamp = stamp(time: row[1], site: row[0])
            earliest[stamp.site] = stamp.time
        }
        return earliest
    }

    /// Whether the store keeps any loser at all (checked once, at open).
    static func any(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM field_conflict)") ?? false
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
    private static func stamp(time: Int64, site: Int64) -> Stamp {
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
