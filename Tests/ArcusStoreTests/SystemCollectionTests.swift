import ArcusCRDT
import Testing
@testable import ArcusStore

/// The `system:` collections: read with SELECT like any other (filters, projections, order,
/// limit), never written, and named in the error for one that does not exist.
@Suite("System collections")
struct SystemCollectionTests {
    @Test("system:collections and system:indexes show what the store holds; a registered one is read with filters and projections")
    func reading() throws {
        let store = try Store(inMemory: Store.Options())
        _ = try store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'a', 'make': 'ford'}), ({'_id': 'b', 'make': 'audi'})")
        _ = try store.execute("INSERT INTO trucks DOCUMENTS ({'_id': 't'})")
        _ = try store.execute("DELETE FROM trucks WHERE _id = 't'")
        _ = try store.execute("CREATE INDEX cars_make ON cars (make)")
        let collections = try store.execute("SELECT _id, documents, removed, indexes FROM system:collections ORDER BY _id").items
        #expect(collections == [
            ["_id": "cars", "documents": 2, "removed": 0, "indexes": ["cars_make"]],
            ["_id": "trucks", "documents": 0, "removed": 1, "indexes": []],
        ])
        #expect(try store.execute("SELECT * FROM system:indexes").items == [["_id": "cars_make", "collection": "cars", "fields": ["make"]]])

        store.registerVirtualCollection("system:peers") { _ in
            [["_id": "p1", "name": "truck-1", "hops": 1], ["_id": "p2", "name": "truck-2", "hops": 2], ["_id": "p3", "name": "pump", "hops": 1]]
        }
        #expect(try store.execute("SELECT name FROM system:peers WHERE hops = 1 ORDER BY name LIMIT 5").items == [["name": "pump"], ["name": "truck-1"]])
        #expect(try store.execute("SELECT * FROM system:peers WHERE name LIKE 'truck%' ORDER BY _id DESC LIMIT 1").items.first?[path: "_id"] == "p2")
        // Aggregates read the rows too (never an index count of the document table).
        #expect(try store.execute("SELECT hops, COUNT(*) AS n FROM system:peers GROUP BY hops").items == [["hops": 1, "n": 2], ["hops": 2, "n": 1]])
        #expect(try store.execute("SELECT COUNT(*) AS n FROM system:peers").items == [["n": 3]])
    }

    @Test("writing a system collection or reading one that does not exist is a clear error, and nothing is written")
    func refused() throws {
        let store = try Store(inMemory: Store.Options())
        for statement in [
            "INSERT INTO system:collections DOCUMENTS ({'_id': 'x'})", "UPDATE system:collections SET a = 1",
            "DELETE FROM system:indexes", "EVICT FROM system:indexes", "CREATE INDEX i ON system:collections (a)",
        ] {
            #expect { try store.execute(statement) } throws: { "\($0)".contains("read-only") }
        }
        #expect { try store.execute("SELECT * FROM system:nothing") } throws: { "\($0)".contains("system:collections, system:conflicts, system:indexes") }
        #expect { try store.registerObserver("SELECT * FROM system:nothing") { _ in } } throws: { "\($0)".contains("system:collections, system:conflicts, system:indexes") }
        #expect(try store.execute("SELECT * FROM system:collections").items.isEmpty)
        // A collection merely named system still works.
        _ = try store.execute("INSERT INTO system DOCUMENTS ({'_id': 'ok'})")
        #expect(try store.execute("SELECT * FROM system").items == [["_id": "ok"]])
    }
}
