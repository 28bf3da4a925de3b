import ArcusCRDT
import ArcusTestSupport
import Foundation
import GRDB
import Testing
@testable import ArcusStore

/// A row keeps the deltas of its document's changes appended to its encoded state
/// (`StoredLayout`): what is read back from the row, without the cache of decoded states, is
/// what the writes made, and rows are rewritten whole before their deltas pile up.
@Suite("Deltas appended to stored states")
struct AppendedStateTests {
    static let collection = "a"

    /// Every document's state decoded from its row alone, and how the row is laid out.
    static func rows(_ store: Store) throws -> [DocumentKey: (state: DocumentState, layout: StoredLayout?)] {
        try store.read { db in
            var found: [DocumentKey: (DocumentState, StoredLayout?)] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT id, state, json FROM document WHERE collection = ?", arguments: [collection]) {
                let key = DocumentKey(collection: collection, id: try Value(json: row[0]))
                var layout: StoredLayout?
                let state = try DocumentRows.decode(row[1], json: row[2], key, site: store.site, layout: &layout)
                found[key] = (state, layout)
            }
            return found
        }
    }

    /// What `sender` has that `receiver` lacks, merged: small deltas, as sync sends them.
    static func pull(_ receiver: Store, from sender: Store) throws {
        try receiver.merge(sender.changes(after: 0, since: receiver.version, limit: .max, to: receiver.site).batch)
    }

    @Test("random local writes and merges: each row read alone holds what the store holds, and rows are rewritten whole in time",
          arguments: SeededRandom.seeds(count: 3, test: "appended-state"))
    func randomWrites(seed: UInt64) throws {
        print("appended-state seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        // Stores on disk: one in memory leaves rows to wait and writes each whole (`DeferredRows`).
        let directories = (0..<3).map { _ in FileManager.default.temporaryDirectory.appendingPathComponent("arcus-appended-\(UUID().uuidString)") }
        defer { for directory in directories { try? FileManager.default.removeItem(at: directory) } }
        let stores = try directories.map { try Store(directory: $0) }
        defer { for store in stores { try? store.close() } }
        var mostParts = 0
        for step in 0..<400 {
            let r = Int.random(in: 0..<3, using: &rng)
            if Int.random(in: 0..<5, using: &rng) == 0 {
                try Self.pull(stores[(r + Int.random(in: 1...2, using: &rng)) % 3], from: stores[r])
            } else {
                let key = DocumentKey(collection: Self.collection, id: .string("d\(Int.random(in: 0..<3, using: &rng))"))
                var local = rng
                try stores[r].write { tx in
                    try tx.apply(key) { state, stamp in RandomMutations.mutate(&state, at: stamp, &local) }
                }
                rng = local
            }
            guard step % 10 == 0 else { continue }
            for store in stores {
                let cached = Dictionary(uniqueKeysWithValues: try store.changes(after: 0, since: .empty, limit: .max).batch.documents.map { ($0.key, $0.state) })
                let rows = try Self.rows(store)
                #expect(Set(rows.keys) == Set(cached.keys), "seed \(seed), step \(step)")
                for (key, row) in rows {
                    #expect(row.state.value == cached[key]?.value, "seed \(seed), step \(step): \(key)")
                    #expect(row.state.eventVersion == cached[key]?.eventVersion, "seed \(seed), step \(step): \(key)")
                    #expect(row.state.version == cached[key]?.version, "seed \(seed), step \(step): \(key)")
                    if let layout = row.layout {
                        #expect(layout.parts <= StoredLayout.maximumParts, "seed \(seed): \(key)")
                        mostParts = max(mostParts, layout.parts)
                    }
                }
            }
        }
        for _ in 0..<2 {
            for from in stores { for to in stores where to !== from { try Self.pull(to, from: from) } }
        }
        let reference = try stores[0].execute("SELECT * FROM a ORDER BY _id").items
        for store in stores {
            #expect(try store.execute("SELECT * FROM a ORDER BY _id").items == reference, "seed \(seed)")
        }
        // The path under test was taken: some row carried appended deltas.
        #expect(mostParts > 0, "seed \(seed): no row ever had a delta appended")
    }

    @Test("a document changed again and again is rewritten whole once its deltas reach the bound")
    func rewrittenWhole() throws {
        let store = try Store(inMemory: Store.Options())
        let key = DocumentKey(collection: Self.collection, id: "d")
        _ = try store.execute("INSERT INTO a DOCUMENTS ({'_id': 'd', 'note': 'a note long enough to give the state some size', 'n': 0})")
        var layouts: [StoredLayout?] = []
        for n in 1...40 {
            _ = try store.execute("UPDATE a SET n = :n WHERE _id = 'd'", arguments: ["n": .int(Int64(n))])
            layouts.append(try Self.rows(store)[key]?.layout)
        }
        let parts = layouts.map { $0?.parts ?? -1 }
        #expect(parts.allSatisfy { $0 <= StoredLayout.maximumParts }, "\(parts)")
        // Appended to, then rewritten whole once the deltas reached the bound.
        let firstAppended = try #require(parts.firstIndex { $0 > 1 }, "no change was appended: \(parts)")
        #expect(parts[firstAppended...].contains(0), "never rewritten whole: \(parts)")
        #expect(try store.execute("SELECT n FROM a WHERE _id = 'd'").items == [["n": .int(40)]])
    }

    @Test("a row whose appended bytes are damaged reads as a damaged document, not as a shorter one")
    func damagedTail() throws {
        let store = try Store(inMemory: Store.Options())
        _ = try store.execute("INSERT INTO a DOCUMENTS ({'_id': 'd', 'n': 0, 'color': 'red'})")
        _ = try store.execute("UPDATE a SET n = 1 WHERE _id = 'd'")
        _ = try store.execute("UPDATE a SET n = 2 WHERE _id = 'd'")
        let key = DocumentKey(collection: Self.collection, id: "d")
        #expect((try Self.rows(store)[key]?.layout?.parts ?? 0) >= 1)
        try store.write { tx in
            try tx.db.execute(sql: "UPDATE document SET state = CAST(state || x'ff07' AS BLOB) WHERE collection = 'a'")
        }
        #expect(throws: StoreError.self) { try store.loggedDocuments([key]) }
    }
}
