import ArcusCRDT
import ArcusCodec
import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// Reading and writing `document` rows.
///
/// The `state` column holds the document's CRDT state encoded with ArcusCodec — or, for a
/// document created by one local write and unchanged since (`DocumentState.creationStamp`), the
/// time of that write as an integer: the state is then rebuilt from the `json` column and the
/// store's site. Most documents are written once, and for them this skips encoding the state
/// and halves the row.
enum DocumentRows {
    /// A document's primary key, its `_id` rendered once.
    struct RowID {
        let key: DocumentKey
        let id: String

        init(_ key: DocumentKey) {
            self.key = key
            id = key.storageID
        }
    }

    static let loadSQL = "SELECT state, json, seq, \(Store.storedBytesSQL) FROM document WHERE collection = ? AND id = ?"

    static let storeSQL = """
        INSERT INTO document (collection, id, state, json, seq) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (collection, id) DO UPDATE SET state = excluded.state, json = excluded.json, seq = excluded.seq
        """

    /// Runs `loadSQL` for `row`, through `cache`.
    static func load(_ statement: RawStatement, _ row: RowID, site: SiteID, cache: DocumentStateCache) throws -> DocumentState? {
        try statement.bind(row.key.collection, at: 1)
        try statement.bind(row.id, at: 2)
        return try statement.firstRow { columns in
            let sequence = columns.int64(2)
            if let state = cache.state(of: row.key, at: sequence) { return state }
            let state = try decode(columns.storedState(0), json: { columns.text(1) }, row.key, site: site)
            cache.insert(state, of: row.key, at: sequence, storedBytes: Int(columns.int64(3)))
            return state
        }
    }

    /// The document as readers see it, from its materialised JSON; nil when there is none.
    static func visibleValue(_ db: Database, _ row: RowID) throws -> Value? {
        let statement = try db.cachedStatement(sql: "SELECT json FROM document WHERE collection = ? AND id = ?")
        guard let json = try String.fetchOne(statement, arguments: [row.key.collection, row.id]) else { return nil }
        return try Value(json: json)
    }

    /// What a `state` column holds.
    enum StoredState {
        case encoded(UnsafeRawBufferPointer)
        /// The time of the one local write that created the document.
        case created(Timestamp)
    }

    /// The state of a row, from its `state` column and, for a created document, its JSON.
    static func decode(_ stored: StoredState, json: () -> String?, _ key: DocumentKey, site: SiteID) throws -> DocumentState {
        switch stored {
        case .encoded(let bytes):
            var context = DecodingContext()
            var reader = ByteReader(Array(bytes))
            do {
                return try context.readDocument(from: &reader)
            } catch {
                throw StoreError.corruptDocument(collection: key.collection, id: key.storageID, reason: error)
            }
        case .created(let time):
            guard let json = json(), case .object(let fields)? = try? Value(json: json),
                let state = DocumentState(creating: fields, excluding: "_id", at: Stamp(time: time, site: site))
            else {
                throw StoreError.corruptDocument(collection: key.collection, id: key.storageID, reason: .invalidValue("its state is stored as a creation time, but its JSON does not rebuild the document"))
            }
            return state
        }
    }

    /// The document as readers see it, with its `_id`; nil when not live.
    static func visibleValue(_ state: DocumentState, id: Value) -> Value? { state.document(id: id) }

    /// Runs `storeSQL` for `row`. Returns the bytes the row keeps (`Store.storedBytesSQL`).
    @discardableResult
    static func store(_ statement: RawStatement, _ row: RowID, state: DocumentState, json: String?, sequence: Int64, site: SiteID,
                      encoder: borrowing Mutex<StateEncoder>) throws -> Int {
        // Every document written passes here, a peer's included: the one place the rule holds.
        try CollectionName.check(row.key.collection)
        try statement.bind(row.key.collection, at: 1)
        try statement.bind(row.id, at: 2)
        var stored = json?.utf8.count ?? 0
        if json != nil, let stamp = state.creationStamp, stamp.site == site {
            try statement.bind(Int64(bitPattern: stamp.time.rawValue), at: 3)
        } else {
            try encoder.withLock { encoder in
                try encoder.encode(state) { bytes in
                    stored += bytes.count
                    try statement.bind(bytes, at: 3)
                }
            }
        }
        try statement.bind(json, at: 4)
        try statement.bind(sequence, at: 5)
        try statement.execute()
        return stored
    }
}

extension DocumentRows {
    /// The state of a row read through GRDB: its `state` column (integer or blob) and its JSON.
    static func decode(_ state: DatabaseValue, json: String?, _ key: DocumentKey, site: SiteID) throws -> DocumentState {
        switch state.storage {
        case .int64(let time):
            return try decode(.created(Timestamp(rawValue: UInt64(bitPattern: time))), json: { json }, key, site: site)
        case .blob(let data):
            return try data.withUnsafeBytes { try decode(.encoded($0), json: { json }, key, site: site) }
        default:
            throw StoreError.corruptDocument(collection: key.collection, id: key.storageID, reason: .invalidValue("its state column is neither an encoded state nor a creation time"))
        }
    }
}

extension DocumentState {
    /// The document as readers see it, with its `_id`; nil when not live.
    public func document(id: Value) -> Value? {
        guard case .object(var fields)? = value else { return nil }
        fields["_id"] = id
        return .object(fields)
    }
}
