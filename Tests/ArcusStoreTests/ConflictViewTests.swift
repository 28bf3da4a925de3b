import ArcusCRDT
import Foundation
import ArcusTestSupport
import GRDB
import Testing
@testable import ArcusStore

/// The conflict view: values of last-writer-wins fields that lost a merge to a write that had
/// not seen them, read with `conflicts(path)` and `system:conflicts`, cleared by a later write.
@Suite("Conflict view")
struct ConflictViewTests {
    /// Stores that keep conflicts (the default keeps none).
    static var keeping: Store.Options {
        var options = Store.Options()
        options.conflictsPerField = 4
        return options
    }

    /// Hands `receiver` every document `sender` holds, as the store's replication path does
    /// (`Store.changes` for that peer, then `Store.merge`).
    static func pull(_ receiver: Store, from sender: Store) throws {
        try receiver.merge(sender.changes(after: 0, since: .empty, limit: .max, to: receiver.site).batch, sayingWhatItSaw: true)
    }

    static func lost(_ store: Store, _ id: String = "c1", field: String = "color") throws -> [Value] {
        let rows = try store.execute("SELECT conflicts(\(field)) AS lost FROM cars WHERE _id = :id", arguments: ["id": .string(id)]).items
        guard case .array(let lost)? = rows.first?[path: "lost"] else { return [] }
        return lost
    }

    /// Two stores that each wrote `color` of car c1 without having seen the other's write
    /// (red on `a`, then blue on `b`, so blue wins), neither synced yet.
    static func concurrentWrites() throws -> (a: Store, b: Store) {
        let a = try Store(inMemory: Self.keeping), b = try Store(inMemory: Self.keeping)
        _ = try a.execute("INSERT INTO cars DOCUMENTS ({'_id': 'c1', 'color': 'red', 'make': 'ford'})")
        // A later millisecond: blue is stamped after red, whatever the sites.
        Thread.sleep(forTimeInterval: 0.005)
        _ = try b.execute("INSERT INTO cars DOCUMENTS ({'_id': 'c1', 'color': 'blue'})")
        return (a, b)
    }

    @Test("after concurrent writes are merged both ways, both stores show the loser with its writer's site and time")
    func bothSidesSeeTheLoser() throws {
        let (a, b) = try Self.concurrentWrites()
        try Self.pull(b, from: a)
        try Self.pull(a, from: b)
        for store in [a, b] {
            #expect(try store.execute("SELECT color FROM cars").items == [["color": "blue"]])
            let lost = try Self.lost(store)
            #expect(lost.count == 1)
            #expect(lost.first?[path: "value"] == "red")
            #expect(lost.first?[path: "site"] == .string(a.site.description))
            let written = try #require(lost.first?[path: "written_at"]?.stringValue)
            #expect(ISO8601Instant(written) != nil, "\(written)")
            #expect(written.hasSuffix("Z"))
            // The other field was not written concurrently.
            #expect(try Self.lost(store, field: "make").isEmpty)
        }
        // Merging the same again keeps one loser, not two.
        try Self.pull(b, from: a)
        try Self.pull(a, from: b)
        #expect(try Self.lost(a).count == 1 && Self.lost(b).count == 1)
    }

    @Test("a later local write clears the field's conflicts; merged elsewhere it clears them there too")
    func laterWriteClears() throws {
        let (a, b) = try Self.concurrentWrites()
        try Self.pull(b, from: a)
        try Self.pull(a, from: b)
        _ = try b.execute("UPDATE cars SET color = 'green' WHERE _id = 'c1'")
        #expect(try Self.lost(b).isEmpty)
        #expect(try Self.lost(a).count == 1)
        try Self.pull(a, from: b)
        #expect(try Self.lost(a).isEmpty, "green was written after b had seen red")
        #expect(try a.execute("SELECT color FROM cars").items == [["color": "green"]])

        // The same from the other side: a's later write clears b's view of its own concurrent pair.
        let (c, d) = try Self.concurrentWrites()
        try Self.pull(d, from: c)
        try Self.pull(c, from: d)
        _ = try c.execute("UPDATE cars SET color = 'white' WHERE _id = 'c1'")
        try Self.pull(d, from: c)
        #expect(try Self.lost(c).isEmpty && Self.lost(d).isEmpty)
    }

    @Test("a write made after seeing the value it overwrites leaves no conflict on either side")
    func causalOverwriteIsNoConflict() throws {
        let a = try Store(inMemory: Self.keeping), b = try Store(inMemory: Self.keeping)
        _ = try a.execute("INSERT INTO cars DOCUMENTS ({'_id': 'c1', 'color': 'red'})")
        try Self.pull(b, from: a)
        _ = try b.execute("UPDATE cars SET color = 'blue' WHERE _id = 'c1'")
        try Self.pull(a, from: b)
        try Self.pull(b, from: a)
        for store in [a, b] {
            #expect(try store.execute("SELECT color FROM cars").items == [["color": "blue"]])
            #expect(try Self.lost(store).isEmpty)
            #expect(try store.execute("SELECT * FROM system:conflicts").items.isEmpty)
        }
    }

    @Test("at most conflictsPerField losers are kept per field, the latest")
    func bounded() throws {
        var options = Self.keeping
        options.conflictsPerField = 2
        let writers = try (0..<4).map { _ in try Store(inMemory: Self.keeping) }
        for (n, writer) in writers.enumerated() {
            _ = try writer.execute("INSERT INTO cars DOCUMENTS ({'_id': 'c1', 'color': :color})", arguments: ["color": .string("color\(n)")])
            Thread.sleep(forTimeInterval: 0.002)
        }
        let winner = try Store(inMemory: options)
        _ = try winner.execute("INSERT INTO cars DOCUMENTS ({'_id': 'c1', 'color': 'black'})")
        for writer in writers { try Self.pull(winner, from: writer) }
        #expect(try Self.lost(winner).map { $0[path: "value"] } == ["color2", "color3"])

        options.conflictsPerField = 0
        let keepsNone = try Store(inMemory: options)
        _ = try keepsNone.execute("INSERT INTO cars DOCUMENTS ({'_id': 'c1', 'color': 'black'})")
        for writer in writers { try Self.pull(keepsNone, from: writer) }
        // Off, it keeps nothing, and reading conflicts says how to turn the view on.
        #expect(try keepsNone.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM field_conflict") } == 0)
        #expect { try Self.lost(keepsNone) } throws: { "\($0)".contains("set conflicts_per_field") }
        #expect { try keepsNone.execute("SELECT * FROM system:conflicts") } throws: { "\($0)".contains("the conflict view is off") }
    }

    @Test("system:conflicts has one row per kept loser, read with ordinary filters; conflicts() works in WHERE")
    func systemCollectionAndFilters() throws {
        let (a, b) = try Self.concurrentWrites()
        _ = try a.execute("INSERT INTO cars DOCUMENTS ({'_id': 'c2', 'color': 'grey'})")
        try Self.pull(b, from: a)
        let rows = try b.execute("SELECT collection, document_id, path, value, site FROM system:conflicts WHERE collection = 'cars'").items
        #expect(rows == [["collection": "cars", "document_id": "c1", "path": "color", "value": "red", "site": .string(a.site.description)]])
        #expect(try b.execute("SELECT * FROM system:conflicts WHERE collection = 'trucks'").items.isEmpty)
        #expect(try b.execute("SELECT written_at FROM system:conflicts").items.first?[path: "written_at"]?.stringValue.map { ISO8601Instant($0) != nil } == true)
        #expect(try b.execute("SELECT _id FROM cars WHERE length(conflicts(color)) > 0").items == [["_id": "c1"]])
        #expect(try b.execute("SELECT _id, conflicts(color)[0].value AS was FROM cars ORDER BY _id").items == [["_id": "c1", "was": "red"], ["_id": "c2"]])
        #expect(try b.execute("SELECT COUNT(*) AS n FROM cars WHERE length(conflicts(color)) = 0").items == [["n": 1]])
        // Evicting the document drops its conflicts with it.
        _ = try b.execute("EVICT FROM cars WHERE _id = 'c1'")
        #expect(try b.execute("SELECT * FROM system:conflicts").items.isEmpty)
    }

    @Test("conflicts() without a field path is a clear error, and nothing is written")
    func badCalls() throws {
        let store = try Store(inMemory: Self.keeping)
        _ = try store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'c1', 'color': 'red'})")
        for (statement, message) in [
            ("SELECT conflicts() FROM cars", "conflicts takes 1 argument"),
            ("SELECT conflicts(1) FROM cars", "conflicts takes a field path"),
            ("SELECT conflicts('color') FROM cars", "conflicts takes a field path"),
            ("SELECT conflicts(tags[0]) FROM cars", "conflicts takes a field path"),
            ("SELECT conflicts(color, make) FROM cars", "conflicts takes 1 argument"),
            ("UPDATE cars SET color = 'x' WHERE length(conflicts(1)) = 0", "conflicts takes a field path"),
        ] {
            #expect { try store.execute(statement) } throws: { "\($0)".contains(message) }
        }
        #expect(try store.execute("SELECT color FROM cars").items == [["color": "red"]])
        #expect { try store.registerObserver("SELECT _id, conflicts(color) FROM cars") { _ in } } throws: { "\($0)".contains("cannot be observed yet") }
        #expect { try SubscriptionQuery("SELECT * FROM cars WHERE length(conflicts(color)) > 0") } throws: { "\($0)".contains("a subscription cannot use conflicts()") }
        // An evaluator without the view says so rather than showing an empty one.
        let evaluator = DQLEvaluator()
        let parsed = try DQLParser.parse("SELECT conflicts(color) AS c FROM cars")
        guard case .select(let select) = parsed else { Issue.record("not a select"); return }
        #expect { try evaluator.project(select.projection, document: ["_id": "c1"]) } throws: { "\($0)".contains("conflict view") }
    }

    @Test("kept losers survive reopening the store; a v5 store gains the table when opened")
    func durableAndMigrated() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-conflicts-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            let queue = try DatabaseQueue(path: directory.appendingPathComponent("store.sqlite").path)
            try StoreSchema.migrator.migrate(queue, upTo: "v5")
        }
        let a = try Store(inMemory: Self.keeping)
        _ = try a.execute("INSERT INTO cars DOCUMENTS ({'_id': 'c1', 'color': 'red'})")
        Thread.sleep(forTimeInterval: 0.005)
        do {
            let b = try Store(directory: directory, options: Self.keeping)
            _ = try b.execute("INSERT INTO cars DOCUMENTS ({'_id': 'c1', 'color': 'blue'})")
            try Self.pull(b, from: a)
            #expect(try Self.lost(b).count == 1)
        }
        // Opened without the setting (as `arcus exec --data` opens an agent's directory), what
        // was kept still reads.
        let reopened = try Store(directory: directory)
        #expect(try Self.lost(reopened).map { $0[path: "value"] } == ["red"])
        // Known to hold conflicts after a restart: a local write still clears them (and, the
        // view being off here, there is then nothing left to read).
        _ = try reopened.execute("UPDATE cars SET color = 'green' WHERE _id = 'c1'")
        #expect(try reopened.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM field_conflict") } == 0)
    }

    @Test("random writes on three stores, pulled with what each had seen of the other's writes, converge; states claim the events they hold",
          arguments: SeededRandom.seeds(count: 3, test: "conflict-view-sync"))
    func convergence(seed: UInt64) throws {
        print("conflict-view-sync seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let stores = try (0..<3).map { _ in try Store(inMemory: Self.keeping) }
        for _ in 0..<200 {
            let r = Int.random(in: 0..<3, using: &rng)
            if Int.random(in: 0..<4, using: &rng) == 0 {
                try Self.pull(stores[(r + Int.random(in: 1...2, using: &rng)) % 3], from: stores[r])
                continue
            }
            let key = DocumentKey(collection: "a", id: .string("d\(Int.random(in: 0..<4, using: &rng))"))
            var local = rng
            try stores[r].write { tx in
                try tx.apply(key) { state, stamp in RandomMutations.mutate(&state, at: stamp, &local) }
            }
            rng = local
        }
        for _ in 0..<2 {
            for from in stores { for to in stores where to !== from { try Self.pull(to, from: from) } }
        }
        let reference = try stores[0].execute("SELECT * FROM a ORDER BY _id").items
        for store in stores {
            #expect(try store.execute("SELECT * FROM a ORDER BY _id").items == reference, "seed \(seed)")
            for document in try store.changes(after: 0, since: .empty, limit: .max).batch.documents {
                #expect(document.state.eventVersion.isCovered(by: document.state.version), "seed \(seed): \(document.key)")
            }
        }
    }
}
