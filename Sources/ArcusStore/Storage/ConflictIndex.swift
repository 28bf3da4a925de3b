import ArcusCRDT
import GRDB
import Synchronization

/// The kept losers of every document that keeps conflicts (rows of `field_conflict`, without
/// their values), in memory. Sync asks about every document it serves (`Store.conflictKnowledge`),
/// and every merge and local write asks before touching `field_conflict`: answered here, only
/// the writes that change kept conflicts run SQL, and documents without any, nearly all, cost a
/// dictionary lookup.
///
/// Loaded at open; a transaction's changes reach it only when that transaction commits
/// (`WriteTransaction.finish`). Its size follows the conflicts kept, at most
/// `conflictsPerField` per field, not the store's.
final class ConflictIndex: Sendable {
    typealias KeptLoser = FieldConflicts.KeptLoser
    private let kept: Mutex<[DocumentKey: [KeptLoser]]>

    init(_ db: Database) throws {
        var kept: [DocumentKey: [KeptLoser]] = [:]
        let rows = try Row.fetchCursor(db, sql: "SELECT collection, id, path, time, site FROM field_conflict")
        while let row = try rows.next() {
            let key = DocumentKey(collection: row[0], id: try Value(json: row[1] as String))
            kept[key, default: []].append(KeptLoser(path: row[2], stamp: FieldConflicts.stamp(time: row[3], site: row[4])))
        }
        self.kept = Mutex(kept)
    }

    /// The kept losers of `key`'s document (empty when it keeps none).
    func losers(of key: DocumentKey) -> [KeptLoser] {
        kept.withLock { $0[key] ?? [] }
    }

    /// Whether no document keeps conflicts.
    var isEmpty: Bool { kept.withLock { $0.isEmpty } }

    /// Sets what `key`'s document keeps now.
    func set(_ losers: [KeptLoser], of key: DocumentKey) {
        kept.withLock { $0[key] = losers.isEmpty ? nil : losers }
    }
}
