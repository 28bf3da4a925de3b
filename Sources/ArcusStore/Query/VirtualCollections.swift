import ArcusCRDT
import GRDB
import Synchronization

/// Read-only collections under `system:` whose rows are made when a SELECT reads them: the
/// store's own (`system:collections`, `system:indexes`, `system:conflicts`) and those a program registers
/// (`Store.registerVirtualCollection`; the agent's `system:data_sync_info`, `system:system_info`,
/// `system:peers`). A SELECT filters, projects, orders and limits them like any collection;
/// nothing writes them.
final class VirtualCollections: Sendable {
    static let prefix = "system:"

    private let registered = Mutex<[String: @Sendable (VirtualCollectionReading) throws -> [Value]]>([:])

    static func isVirtual(_ collection: String) -> Bool { collection.hasPrefix(prefix) }

    func register(_ name: String, rows: @escaping @Sendable (VirtualCollectionReading) throws -> [Value]) {
        registered.withLock { $0[name] = rows }
    }

    /// Every name a SELECT can read.
    func names() -> [String] {
        (["system:collections", "system:conflicts", "system:indexes"] + registered.withLock { Array($0.keys) }).sorted()
    }

    /// The rows of `collection`, read through `db` for the store's own.
    func rows(of collection: String, db: Database, indexes: [FieldIndex]) throws -> [Value] {
        switch collection {
        case "system:collections":
            let rows = try Row.fetchAll(db, sql: """
                SELECT collection, sum(json IS NOT NULL), sum(json IS NULL), sum(length(state) + ifnull(length(CAST(json AS BLOB)), 0))
                FROM document GROUP BY collection ORDER BY collection
                """)
            return rows.map { row in
                let name: String = row[0]
                return .object([
                    "_id": .string(name), "documents": .int(row[1]), "removed": .int(row[2]), "stored_bytes": .int(row[3]),
                    "indexes": .array(indexes.filter { $0.collection == name }.map { .string($0.name) }),
                ])
            }
        case "system:conflicts":
            return try FieldConflicts.systemRows(db)
        case "system:indexes":
            return indexes.sorted { $0.name < $1.name }.map { index in
                .object(["_id": .string(index.name), "collection": .string(index.collection), "fields": .array(index.paths.map { .string($0.description) })])
            }
        default:
            guard let rows = registered.withLock({ $0[collection] }) else {
                throw StoreError.invalidQuery("no collection \(collection): the system collections are \(names().joined(separator: ", "))")
            }
            return try rows(VirtualCollectionReading(db: db))
        }
    }

    /// Throws for a statement that would write `collection`, if it is virtual.
    static func checkWritable(_ collection: String) throws {
        guard isVirtual(collection) else { return }
        throw StoreError.invalidQuery("\(collection) is read-only: the system: collections show the store's and the agent's state")
    }
}

extension Store {
    /// Makes `name` (which must start with `system:`) a read-only collection whose rows `rows`
    /// returns each time a SELECT reads it; each row is a JSON object with an `_id`. `rows` runs
    /// inside the SELECT's read: it must not use the store (that read would wait for itself),
    /// only what it is handed.
    public func registerVirtualCollection(_ name: String, rows: @escaping @Sendable (VirtualCollectionReading) throws -> [Value]) {
        precondition(VirtualCollections.isVirtual(name), "a virtual collection's name starts with system:")
        virtualCollections.register(name, rows: rows)
    }
}

/// What a virtual collection's rows may read of the store, inside the SELECT's own read.
public struct VirtualCollectionReading {
    let db: Database

    /// How many live documents each collection holds (`Store.documentCounts`).
    public func documentCounts() throws -> [String: Int] { try Store.documentCounts(db) }

    /// The sync records whose keys start with `prefix` (`Store.syncRecords`).
    public func syncRecords(prefix: String) throws -> [(key: String, value: [UInt8])] { try Store.syncRecords(prefix: prefix, db) }
}
