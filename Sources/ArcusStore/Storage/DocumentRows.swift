import ArcusCRDT
import ArcusCodec
import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// Reading and writing `document` rows.
///
/// The `state` column holds the document's CRDT state encoded with ArcusCodec — or, for a
/// document created by one write and unchanged since (`DocumentState.creationStamp`), that
/// write's stamp: as an integer (its time) when the write was this store's own, as text
/// (`CreationText`: its site and time) when it came from another site. The state is then rebuilt
/// from the `json` column. Most documents are written once, and for them this skips encoding
/// the state and halves the row — on the device that wrote them and on every device they reach.
///
/// An encoded state may be followed by deltas appended since (`StoredLayout`): a change to a
/// document encodes only what changed, not the whole state again, and the row is rewritten
/// whole once its deltas add up to about its own size. Reading joins them in.
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

    /// A row's position, from the key's index alone: enough when the cache has its state.
    static let positionSQL = "SELECT seq FROM document WHERE collection = ? AND id = ?"
    /// The row at a position, read only when the cache does not have its state.
    static let loadSQL = "SELECT state, json, \(Store.storedBytesSQL) FROM document WHERE seq = ?"

    static let storeSQL = """
        INSERT INTO document (collection, id, state, json, seq) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (collection, id) DO UPDATE SET state = excluded.state, json = excluded.json, seq = excluded.seq
        """

    /// `storeSQL` for a document the writer has not looked for: writes nothing (no change
    /// counted) when the row exists after all.
    static let insertSQL = """
        INSERT INTO document (collection, id, state, json, seq) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (collection, id) DO NOTHING
        """

    /// Appends an encoded delta to a row's encoded state, if the row is still at the position
    /// the caller saw it at (so is laid out as it thinks) and holds an encoded state.
    /// `||` makes text of blobs; the cast keeps the bytes.
    static let appendSQL = """
        UPDATE document SET state = CAST(state || ? AS BLOB), json = ?, seq = ?
        WHERE collection = ? AND id = ? AND seq = ? AND typeof(state) = 'blob'
        """

    /// The state of `row` through `cache`: `position` (`positionSQL`) finds where the row is,
    /// and only if the cache lacks the state there does `load` (`loadSQL`) read and decode it.
    /// `toChange`: the caller will change the state, so the cache lets go of it (`take`).
    static func load(_ row: RowID, position: RawStatement, load: RawStatement, site: SiteID, cache: DocumentStateCache, toChange: Bool = false) throws -> DocumentState? {
        try position.bind(row.key.collection, at: 1)
        try position.bind(row.id, at: 2)
        guard let sequence = try position.firstRow({ $0.int64(0) }) else { return nil }
        if let state = toChange ? cache.take(of: row.key, at: sequence) : cache.state(of: row.key, at: sequence) { return state }
        try load.bind(sequence, at: 1)
        return try load.firstRow { columns in
            var layout: StoredLayout?
            let state = try decode(columns.storedState(0), json: { columns.text(1) }, row.key, site: site, layout: &layout)
            cache.insert(state, of: row.key, at: sequence, storedBytes: Int(columns.int64(2)), layout: layout, taken: toChange)
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
        /// The stamp of the one write, another site's, that created the document.
        case createdElsewhere(Stamp)
        /// Text that is not a creation stamp: the row is damaged.
        case unreadable
    }

    /// How a `state` column holds another site's creation stamp: its site and time, 16 hex
    /// digits each (text, so that it cannot be taken for an encoded state or a local time).
    enum CreationText {
        static func text(_ stamp: Stamp) -> String {
            String(unsafeUninitializedCapacity: 32) { buffer in
                for nibble in 0..<16 {
                    let shift = UInt64(60 - 4 * nibble)
                    buffer[nibble] = digits[Int(stamp.site.rawValue >> shift & 0xF)]
                    buffer[16 + nibble] = digits[Int(stamp.time.rawValue >> shift & 0xF)]
                }
                return 32
            }
        }

        /// What a text `state` column holds: a creation stamp, or damage.
        static func stored(_ utf8: some Collection<UInt8>) -> StoredState {
            stamp(utf8).map(StoredState.createdElsewhere) ?? .unreadable
        }

        private static let digits = Array("0123456789abcdef".utf8)

        static func stamp(_ utf8: some Collection<UInt8>) -> Stamp? {
            guard utf8.count == 32 else { return nil }
            var site: UInt64 = 0, time: UInt64 = 0
            for (offset, byte) in utf8.enumerated() {
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                default: return nil
                }
                if offset < 16 { site = site << 4 | UInt64(digit) } else { time = time << 4 | UInt64(digit) }
            }
            return Stamp(time: Timestamp(rawValue: time), site: SiteID(site))
        }
    }

    /// The state of a row, from its `state` column and, for a created document, its JSON.
    static func decode(_ stored: StoredState, json: () -> String?, _ key: DocumentKey, site: SiteID) throws -> DocumentState {
        var layout: StoredLayout?
        return try decode(stored, json: json, key, site: site, layout: &layout)
    }

    /// `decode`, also saying how an encoded state is laid out (nil for a creation time).
    static func decode(_ stored: StoredState, json: () -> String?, _ key: DocumentKey, site: SiteID,
                       layout: inout StoredLayout?) throws -> DocumentState {
        switch stored {
        case .encoded(let bytes):
            // Each part is a stream of its own (`StateEncoder`): a fresh context for each.
            var reader = ByteReader(Array(bytes))
            do {
                var context = DecodingContext()
                var state = try context.readDocument(from: &reader)
                var found = StoredLayout(whole: bytes.count - reader.remaining)
                while !reader.isAtEnd {
                    let start = reader.remaining
                    var context = DecodingContext()
                    state.join(try context.readDocument(from: &reader))
                    found.appended(start - reader.remaining)
                }
                layout = found
                return state
            } catch {
                throw StoreError.corruptDocument(collection: key.collection, id: key.storageID, reason: error)
            }
        case .created(let time):
            return try created(at: Stamp(time: time, site: site), json: json, key)
        case .createdElsewhere(let stamp):
            return try created(at: stamp, json: json, key)
        case .unreadable:
            throw StoreError.corruptDocument(collection: key.collection, id: key.storageID, reason: .invalidValue("its state column holds text that is not a creation stamp"))
        }
    }

    /// The state one write at `stamp` created, rebuilt from the row's JSON.
    private static func created(at stamp: Stamp, json: () -> String?, _ key: DocumentKey) throws -> DocumentState {
        guard let json = json(), let state = DocumentState(creatingFromJSON: json, excluding: "_id", at: stamp) else {
            throw StoreError.corruptDocument(collection: key.collection, id: key.storageID, reason: .invalidValue("its state is stored as a creation stamp, but its JSON does not rebuild the document"))
        }
        return state
    }

    /// The document as readers see it, with its `_id`; nil when not live.
    static func visibleValue(_ state: DocumentState, id: Value) -> Value? { state.document(id: id) }

    /// What a row keeps once written: its bytes (`Store.storedBytesSQL`) and, for an encoded
    /// state, how that is laid out.
    struct Written {
        var storedBytes: Int
        var layout: StoredLayout?
    }

    /// Runs `storeSQL` for `row`, writing its state whole.
    @discardableResult
    static func store(_ statement: RawStatement, _ row: RowID, state: DocumentState, json: String?, sequence: Int64, site: SiteID,
                      encoder: borrowing Mutex<StateEncoder>) throws -> Written {
        // Every document written passes here, a peer's included: the one place the rule holds
        // (`append` only extends a row that came through here).
        try CollectionName.check(row.key.collection)
        try statement.bind(row.key.collection, at: 1)
        try statement.bind(row.id, at: 2)
        var written = Written(storedBytes: json?.utf8.count ?? 0)
        // A peer's document may carry a field named `_id` at its root, which the JSON's `_id`
        // hides: rebuilt from the JSON, it would be lost. A state naming `_id` anywhere is kept
        // encoded.
        if json != nil, let stamp = state.creationStamp, !state.names.contains("_id") {
            if stamp.site == site {
                try statement.bind(Int64(bitPattern: stamp.time.rawValue), at: 3)
            } else {
                let text = CreationText.text(stamp)
                written.storedBytes += text.utf8.count
                try statement.bind(text, at: 3)
            }
        } else {
            try encoder.withLock { encoder in
                try encoder.encode(state) { bytes in
                    written.storedBytes += bytes.count
                    written.layout = StoredLayout(whole: bytes.count)
                    try statement.bind(bytes, at: 3)
                }
            }
        }
        try statement.bind(json, at: 4)
        try statement.bind(sequence, at: 5)
        try statement.execute()
        return written
    }

    /// Runs `appendSQL` for `row`, whose state the caller has joined `delta` into and whose row
    /// it last saw at `previous` laid out as `layout`. Returns nil, having written nothing, when
    /// the delta does not fit the layout's allowance or the row is no longer as seen: the
    /// caller then writes the state whole.
    static func append(_ statement: RawStatement, _ db: Database, _ row: RowID, delta: DocumentState, json: String?, sequence: Int64,
                       onto previous: Int64, laidOut layout: StoredLayout, encoder: borrowing Mutex<StateEncoder>) throws -> Written? {
        try encoder.withLock { encoder in
            try encoder.encode(delta) { bytes -> Written? in
                guard layout.admits(bytes.count) else { return nil }
                try statement.bind(bytes, at: 1)
                try statement.bind(json, at: 2)
                try statement.bind(sequence, at: 3)
                try statement.bind(row.key.collection, at: 4)
                try statement.bind(row.id, at: 5)
                try statement.bind(previous, at: 6)
                try statement.execute()
                guard db.changesCount == 1 else { return nil }
                var grown = layout
                grown.appended(bytes.count)
                return Written(storedBytes: grown.bytes + (json?.utf8.count ?? 0), layout: grown)
            }
        }
    }
}

extension DocumentRows {
    /// The state of a row read through GRDB: its `state` column (integer or blob) and its JSON.
    static func decode(_ state: DatabaseValue, json: String?, _ key: DocumentKey, site: SiteID) throws -> DocumentState {
        var layout: StoredLayout?
        return try decode(state, json: json, key, site: site, layout: &layout)
    }

    /// `decode`, also saying how an encoded state is laid out (nil for a creation time).
    static func decode(_ state: DatabaseValue, json: String?, _ key: DocumentKey, site: SiteID, layout: inout StoredLayout?) throws -> DocumentState {
        switch state.storage {
        case .int64(let time):
            return try decode(.created(Timestamp(rawValue: UInt64(bitPattern: time))), json: { json }, key, site: site, layout: &layout)
        case .string(let text):
            return try decode(CreationText.stored(text.utf8), json: { json }, key, site: site, layout: &layout)
        case .blob(let data):
            return try data.withUnsafeBytes { try decode(.encoded($0), json: { json }, key, site: site, layout: &layout) }
        default:
            throw StoreError.corruptDocument(collection: key.collection, id: key.storageID, reason: .invalidValue("its state column is neither an encoded state nor a creation stamp"))
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
