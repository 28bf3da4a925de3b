import ArcusCRDT
import ArcusTestSupport
import Foundation
import GRDB
import Testing
@testable import ArcusStore

/// A store in memory leaves its documents' rows to wait (`DeferredRows`) until something reads
/// the rows. Nothing a caller can see may differ from a store that writes every row at once:
/// the same queries answer the same, the change log holds the same documents at the same
/// positions, page by page.
@Suite("Rows left to wait in memory")
struct DeferredRowsTests {
    /// How many rows the `document` table holds, read without writing the waiting ones.
    static func rowCount(_ store: Store) throws -> Int {
        try store.readWithoutRows { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM document") ?? 0 }
    }

    static func options(site: SiteID, limit: Int = DeferredRows.defaultLimit) -> Store.Options {
        var options = Store.Options()
        options.site = site
        // One reading for ever: the stamps come from the logical counter alone, the same in
        // both stores for the same writes.
        options.physicalClock = { 1_780_000_000_000 }
        options.rowsWaitingLimit = limit
        return options
    }

    @Test("a write leaves its row to wait; a query writes it, and sees the document")
    func rowsWaitForAReader() throws {
        let store = try Store(inMemory: Self.options(site: SiteID(7)))
        try store.collection("c").upsert(["_id": "a", "n": 1])
        try store.collection("c").upsert(["_id": "a", "n": 2])
        try store.collection("c").upsert(["_id": "b", "n": 3])
        #expect(try Self.rowCount(store) == 0)
        // The change log has them without their rows: the latest change of each.
        let changed = try store.changedDocuments(after: 0, limit: 10)
        #expect(changed.documents.map(\.key.id) == ["a", "b"])
        #expect(changed.documents.map(\.sequence) == [2, 3])
        #expect(changed.position == 3 && changed.isComplete)
        #expect(try store.lastLoggedPosition() == 3)
        #expect(try store.execute("SELECT _id, n FROM c ORDER BY _id").items == [["_id": "a", "n": 2], ["_id": "b", "n": 3]])
        #expect(try Self.rowCount(store) == 2)
        #expect(try store.changedDocuments(after: 0, limit: 10).documents.map(\.sequence) == [2, 3])
    }

    @Test("a transaction that throws leaves nothing waiting")
    func rollback() throws {
        struct Refused: Error {}
        let store = try Store(inMemory: Self.options(site: SiteID(7)))
        try store.collection("c").upsert(["_id": "a", "n": 1])
        #expect(throws: Refused.self) {
            try store.write { tx in
                try tx.upsert(["_id": "a", "n": 2], into: "c")
                try tx.upsert(["_id": "b", "n": 3], into: "c")
                throw Refused()
            }
        }
        #expect(try store.changedDocuments(after: 0, limit: 10).documents.map(\.key.id) == ["a"])
        #expect(try store.lastLoggedPosition() == 1)
        #expect(try store.execute("SELECT _id, n FROM c ORDER BY _id").items == [["_id": "a", "n": 1]])
    }

    @Test("a statement inside a transaction sees what the transaction wrote before it")
    func statementInsideTransaction() throws {
        let store = try Store(inMemory: Self.options(site: SiteID(7)))
        try store.collection("c").upsert(["_id": "a", "n": 1])
        try store.write { tx in
            try tx.upsert(["_id": "b", "n": 2], into: "c")
            #expect(try tx.execute("UPDATE c SET n = n + 10 WHERE n >= 1").mutatedDocumentIDs.count == 2)
            try tx.upsert(["_id": "c", "n": 3], into: "c")
        }
        #expect(try store.execute("SELECT _id, n FROM c ORDER BY _id").items == [["_id": "a", "n": 11], ["_id": "b", "n": 12], ["_id": "c", "n": 3]])
        #expect(try store.changedDocuments(after: 0, limit: 10).documents.map(\.key.id) == ["a", "b", "c"])
    }

    @Test("past the limit, a commit writes the rows")
    func limit() throws {
        let store = try Store(inMemory: Self.options(site: SiteID(7), limit: 4))
        for n in 0..<4 { try store.collection("c").upsert(["_id": .string("d\(n)"), "n": .int(Int64(n))]) }
        #expect(try Self.rowCount(store) == 0)
        try store.collection("c").upsert(["_id": "d4", "n": 4])
        #expect(try Self.rowCount(store) == 5)
        #expect(store.deferredRows?.isEmpty == true)
    }

    @Test("random writes, merges, removals, evictions and failed transactions: a store in memory answers as one on disk does",
          arguments: SeededRandom.seeds(count: 4, test: "deferred-rows"))
    func sameAsRowsAtOnce(seed: UInt64) throws {
        print("deferred-rows seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let limit = Int.random(in: 3...200, using: &rng)
        let site = SiteID(0xA), elsewhere = SiteID(0xB)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-deferred-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let waiting = try Store(inMemory: Self.options(site: site, limit: limit))
        let atOnce = try Store(directory: directory, options: Self.options(site: site))
        defer { try? atOnce.close() }
        let peer = try Store(inMemory: Self.options(site: elsewhere))
        let collections = ["c", "d"]
        func key(_ rng: inout SeededRandom) -> DocumentKey {
            DocumentKey(collection: collections.randomElement(using: &rng)!, id: .string("k\(Int.random(in: 0..<12, using: &rng))"))
        }
        for step in 0..<300 {
            let context = "seed \(seed), limit \(limit), step \(step)"
            switch Int.random(in: 0..<20, using: &rng) {
            case 0..<8:
                let key = key(&rng), n = Int64.random(in: 0..<100, using: &rng)
                for store in [waiting, atOnce] { try store.write { tx in try tx.upsert(["_id": key.id, "n": .int(n)], into: key.collection) } }
            case 8..<10:
                let key = key(&rng)
                for store in [waiting, atOnce] { try store.write { tx in try tx.remove(key) } }
            case 10:
                let key = key(&rng)
                for store in [waiting, atOnce] { try store.write { tx in try tx.evict(key) } }
            case 11..<13:
                struct Refused: Error {}
                let key = key(&rng)
                for store in [waiting, atOnce] {
                    #expect(throws: Refused.self, "\(context)") {
                        try store.write { tx in
                            try tx.upsert(["_id": key.id, "n": -1], into: key.collection)
                            throw Refused()
                        }
                    }
                }
            case 13..<16:
                let key = key(&rng), n = Int64.random(in: 0..<100, using: &rng)
                try peer.write { tx in try tx.upsert(["_id": key.id, "m": .int(n)], into: key.collection) }
                let batch = try peer.changes(after: 0, since: waiting.version, limit: .max, to: site).batch
                for store in [waiting, atOnce] { try store.merge(batch) }
            case 16:
                let key = key(&rng)
                for store in [waiting, atOnce] { _ = try store.execute("UPDATE \(key.collection) SET n = n + 1 WHERE n >= 50") }
            default:
                let collection = collections.randomElement(using: &rng)!
                let query = "SELECT * FROM \(collection) ORDER BY _id"
                #expect(try waiting.execute(query).items == atOnce.execute(query).items, "\(context)")
            }
            try Self.compareLogs(waiting, atOnce, &rng, context: context)
        }
        for collection in collections {
            let query = "SELECT * FROM \(collection) ORDER BY _id"
            #expect(try waiting.execute(query).items == atOnce.execute(query).items, "seed \(seed)")
        }
    }

    /// The change log read page by page from a random position, whole and per collection, and
    /// what else reads it, the same in both stores.
    static func compareLogs(_ waiting: Store, _ atOnce: Store, _ rng: inout SeededRandom, context: String) throws {
        #expect(waiting.version == atOnce.version, "\(context)")
        let last = try atOnce.lastLoggedPosition()
        #expect(try waiting.lastLoggedPosition() == last, "\(context)")
        let start = Int64.random(in: 0...max(0, last), using: &rng)
        let limit = Int.random(in: 1...6, using: &rng)
        for collection in [nil, "c", "d"] {
            #expect(try pages(waiting, after: start, limit: limit, collection: collection) == pages(atOnce, after: start, limit: limit, collection: collection),
                    "\(context), from \(start) by \(limit) in \(collection ?? "every collection")")
            let end = Int64.random(in: start...max(start, last), using: &rng)
            #expect(try waiting.backlog(after: start, through: end, collection: collection).documents
                    == atOnce.backlog(after: start, through: end, collection: collection).documents, "\(context), backlog \(start)...\(end)")
        }
        let keys = (0..<4).map { _ in DocumentKey(collection: ["c", "d"].randomElement(using: &rng)!, id: .string("k\(Int.random(in: 0..<12, using: &rng))")) }
        let logged = { (store: Store) in try store.loggedDocuments(keys).map { "\($0.key) \($0.sequence) \($0.value?.jsonString ?? "removed")" } }
        #expect(try logged(waiting) == logged(atOnce), "\(context), documents \(keys)")
    }

    /// Every document from `position` on, read page by page (key, position, value), and the
    /// position after the last page. Pages may break at other places in the two stores (a row
    /// a waiting document supersedes is passed over), but each holds at most `limit`
    /// documents, in log order, and moves the position on.
    static func pages(_ store: Store, after position: Int64, limit: Int, collection: String?) throws -> [String] {
        var documents: [String] = [], position = position, pages = 0
        while true {
            let page = try store.changedDocuments(after: position, limit: limit, collection: collection)
            pages += 1
            #expect(page.documents.count <= limit)
            #expect(page.documents.map(\.sequence) == page.documents.map(\.sequence).sorted())
            #expect(page.documents.allSatisfy { $0.sequence > position && $0.sequence <= page.position })
            documents += page.documents.map { "\($0.key) \($0.sequence) \($0.value?.jsonString ?? "removed")" }
            if page.isComplete { return documents + ["→ \(page.position)"] }
            #expect(page.position > position, "a page that is not the last moves the position on")
            guard page.position > position, pages < 10_000 else { return documents + ["stuck at \(page.position)"] }
            position = page.position
        }
    }
}
