import ArcusCRDT
import ArcusStore

/// DQL text (`DQLParser.parse(_:)`, then `Store.execute`): what the local API and `arcus exec`
/// take from a user or a program. A statement that parses is run against a small in-memory store,
/// a SELECT as a read, anything else inside a transaction that is rolled back, so every input
/// meets the same store; the store must answer or refuse, never crash.
enum DQLTarget {
    static let target = FuzzTarget(
        name: "dql", entryPoint: "ArcusStore: DQLParser.parse(_:), Store.execute(_:arguments:), WriteTransaction.execute(_:arguments:)",
        run: run, seeds: seeds
    )

    static func run(_ bytes: [UInt8]) {
        // DQL arrives as a string (JSON or a command line): the bytes as UTF-8, repaired.
        let text = String(decoding: bytes, as: UTF8.self)
        guard let statement = try? DQLParser.parse(text) else { return }
        FuzzStore.execute(text, statement: statement, arguments: FuzzStore.arguments)
    }

    static func seeds() -> [[UInt8]] {
        [
            "SELECT * FROM cars",
            "SELECT * FROM cars WHERE color = :color ORDER BY year DESC LIMIT 2 OFFSET 1",
            "SELECT make, owner.name FROM cars WHERE year > 2010 AND (color IN ['red', 'blue'] OR NOT sold)",
            "SELECT * FROM cars WHERE make LIKE 'T%a_' AND owner.name IS NOT NULL",
            "SELECT * FROM orders WHERE total BETWEEN 10 AND 100 AND items[0].sku = 'a1'",
            "SELECT * FROM orders WHERE created > '2026-01-01T00:00:00Z' ORDER BY created",
            "SELECT upper(make), coalesce(color, 'none') FROM cars WHERE contains(make, 'o') OR length(make) > 3",
            "CREATE INDEX by_color ON cars (color)",
            "INSERT INTO cars DOCUMENTS ({'_id': 'new', 'make': 'kia', 'year': 2024}), (:doc)",
            "INSERT INTO cars DOCUMENTS ({'_id': 'c1', 'color': 'green'}) ON ID CONFLICT DO UPDATE",
            "INSERT INTO cars DOCUMENTS ({'_id': {'vin': 'x', 'n': 1}, 'make': 'bmw'})",
            "UPDATE cars SET color = 'black', owner.name = :name WHERE _id = 'c1'",
            "UPDATE cars UNSET owner WHERE year < 2000",
            "UPDATE orders APPLY visits PN_INCREMENT BY 1 WHERE _id = 'o1'",
            "DELETE FROM cars WHERE color = 'red'",
            "EVICT FROM orders WHERE total < 5",
        ].map { Array($0.utf8) }
    }
}

/// The store the DQL and HTTP-body targets run statements against: a few documents of every
/// shape, never changed (writes are rolled back).
enum FuzzStore {
    static let store: Store = {
        let store = try! Store(inMemory: Store.Options())
        try! store.write { tx in
            try tx.upsert(["_id": "c1", "make": "toyota", "color": "red", "year": 2012, "sold": false,
                           "owner": ["name": "ann", "since": "2020-05-01T10:00:00Z"]], into: "cars")
            try tx.upsert(["_id": "c2", "make": "tesla", "color": "blue", "year": 2021, "tags": ["ev", "fast"]], into: "cars")
            try tx.upsert(["_id": "c3", "make": "ford", "year": 1999, "price": 12.5], into: "cars")
            try tx.upsert(["_id": "o1", "total": 42, "created": "2026-02-03T04:05:06Z",
                           "items": [["sku": "a1", "qty": 2], ["sku": "b2", "qty": 1]]], into: "orders")
            try tx.upsert(["_id": ["site": "north", "n": 1], "total": 3.5, "note": .null], into: "orders")
        }
        return store
    }()

    static let arguments: [String: Value] = [
        "color": "red", "name": "bob", "doc": ["_id": "d9", "make": "vw"], "n": 3, "list": [1, "two", 3.0],
    ]

    struct RolledBack: Error {}

    /// Runs a parsed statement: a SELECT as a read, anything else in a transaction rolled back.
    /// Index statements are parsed only: an index lives beside the transaction, and a store that
    /// changed between inputs would make findings impossible to replay.
    static func execute(_ text: String, statement: DQLStatement, arguments: [String: Value]) {
        switch statement {
        case .createIndex, .dropIndex: return
        default: break
        }
        if statement.isReadOnly {
            _ = try? store.execute(text, arguments: arguments)
            return
        }
        _ = try? store.write { tx in
            _ = try? tx.execute(text, arguments: arguments)
            throw RolledBack()
        }
    }
}
