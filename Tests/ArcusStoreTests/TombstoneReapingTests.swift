import ArcusCRDT
import ArcusCodec
import Foundation
import Testing
@testable import ArcusStore

/// Reaped tombstones (`Store.reapTombstones`): the store forgets a removed document, yet a late
/// copy of its old fields does not bring it back, and a store that reaped reads the same as one
/// that kept the tombstone.
@Suite("Reaping tombstones")
struct TombstoneReapingTests {
    /// Everything `from` holds, merged into `to`, as a peer's first answer would bring it.
    static func send(_ from: Store, to: Store) throws {
        try to.merge(try from.changes(after: 0, since: VersionVector(), limit: 100_000).batch)
    }

    static func rows(_ store: Store, _ collection: String = "cars") throws -> Int {
        try store.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM document WHERE collection = ?", arguments: [collection]) ?? 0 }
    }

    static func reapAll(_ store: Store) throws -> [String: Int] {
        try store.reapTombstones(olderThan: .max, known: { _ in store.version })
    }

    @Test("a reaped document stays gone when an old copy arrives; a write its removal had not seen arrives as it would have beside the tombstone")
    func lateCopies() throws {
        let reaper = try Store(inMemory: Store.Options()), keeper = try Store(inMemory: Store.Options())
        let away = try Store(inMemory: Store.Options())
        try reaper.execute("INSERT INTO cars DOCUMENTS ({'_id': 'd', 'make': 'ford', 'year': 1999}), ({'_id': 'kept', 'make': 'kia'})")
        try Self.send(reaper, to: away)
        try Self.send(reaper, to: keeper)
        try reaper.execute("DELETE FROM cars WHERE _id = 'd'")
        try Self.send(reaper, to: keeper)   // the keeper holds the tombstone
        #expect(try Self.rows(reaper) == 2)

        #expect(try Self.reapAll(reaper) == ["cars": 1])
        #expect(try Self.rows(reaper) == 1, "the tombstone's row is gone")
        #expect(!reaper.reapedHorizon(of: "cars").isEmpty)
        #expect(try Self.reapAll(reaper) == [:], "nothing more to reap")

        // The peer that was away sends its old copy: nothing comes back, no row is made.
        try Self.send(away, to: reaper)
        #expect(try reaper.execute("SELECT _id FROM cars ORDER BY _id").items == [["_id": "kept"]])
        #expect(try Self.rows(reaper) == 1)

        // It had written to the document meanwhile, unaware of the removal: that write survives
        // the removal (add-wins), without the removed fields — on the reaper as on the keeper.
        try away.execute("UPDATE cars SET color = 'red' WHERE _id = 'd'")
        try Self.send(away, to: reaper)
        try Self.send(away, to: keeper)
        let reaped = try reaper.execute("SELECT * FROM cars WHERE _id = 'd'").items
        #expect(reaped == [["_id": "d", "color": "red"]])
        #expect(reaped == (try keeper.execute("SELECT * FROM cars WHERE _id = 'd'").items))
        // And the old copy, sent again, still brings nothing of the removed fields.
        try Self.send(away, to: reaper)
        #expect(try reaper.execute("SELECT * FROM cars WHERE _id = 'd'").items == reaped)
    }

    @Test("reaping goes a batch at a time outside the writer: a tombstone written again between its read and its batch's delete stays, live, and only the others are reaped")
    func writtenDuringThePass() throws {
        let store = try Store(inMemory: Store.Options())
        let ids = (0..<(Store.reapBatch + 20)).map { "r\($0)" }
        for id in ids { try store.execute("INSERT INTO cars DOCUMENTS ({'_id': :id, 'make': 'ford'})", arguments: ["id": .string(id)]) }
        try store.execute("DELETE FROM cars")
        var wrote = false
        // `known` is asked while a batch is being judged, after its rows were read: the
        // moment another writer could come in.
        let reaped = try store.reapTombstones(olderThan: .max, known: { _ in
            if !wrote {
                wrote = true
                _ = try? store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'r0', 'make': 'kia'})")
            }
            return store.version
        })
        #expect(reaped == ["cars": ids.count - 1])
        #expect(try store.execute("SELECT * FROM cars").items == [["_id": "r0", "make": "kia"]])
        #expect(try Self.rows(store) == 1)
    }

    @Test("a peer that was away purges what its server reaped, keeps what the removal had not seen, and then refuses old copies too")
    func purgeAtTheStalePeer() throws {
        let server = try Store(inMemory: Store.Options()), away = try Store(inMemory: Store.Options())
        let third = try Store(inMemory: Store.Options())
        try server.execute("INSERT INTO cars DOCUMENTS ({'_id': 'gone', 'make': 'ford'}), ({'_id': 'edited', 'make': 'audi'}), ({'_id': 'live', 'make': 'kia'})")
        try Self.send(server, to: away)
        try Self.send(server, to: third)
        try server.execute("DELETE FROM cars WHERE _id IN ['gone', 'edited']")
        try Self.reapAll(server)
        try away.execute("UPDATE cars SET color = 'blue' WHERE _id = 'edited'")   // unaware of the removal
        let horizon = server.reapedHorizon(of: "cars")

        // The server holds neither removed document: an empty version for each.
        let purged = try away.purge([DocumentKey("cars", "gone"): [], DocumentKey("cars", "edited"): []], under: horizon, collection: "cars")
        #expect(purged == 2)
        #expect(try away.execute("SELECT * FROM cars ORDER BY _id").items == [["_id": "edited", "color": "blue"], ["_id": "live", "make": "kia"]])
        #expect(away.reapedHorizon(of: "cars") == horizon)
        // A third peer's old copy no longer brings the removed documents back here either.
        try Self.send(third, to: away)
        #expect(try away.execute("SELECT _id FROM cars ORDER BY _id").items == [["_id": "edited"], ["_id": "live"]])
        #expect(try away.execute("SELECT * FROM cars WHERE _id = 'edited'").items == [["_id": "edited", "color": "blue"]])
    }

    @Test("reaping keeps what it must: live documents, tombstones younger than the cutoff or not known in full, withheld documents")
    func whatStays() throws {
        let store = try Store(inMemory: Store.Options())
        try store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'a'}), ({'_id': 'b'}), ({'_id': 'c'})")
        try store.execute("DELETE FROM cars WHERE _id IN ['a', 'b']")
        #expect(try store.reapTombstones(olderThan: .zero, known: { _ in store.version }) == [:], "younger than the cutoff")
        #expect(try store.reapTombstones(olderThan: .max, known: { _ in VersionVector() }) == [:], "not known in full")
        #expect(try store.reapTombstones(olderThan: .max, known: { _ in nil }) == [:], "no knowledge of the collection")
        #expect(try store.reapTombstones(olderThan: .max, known: { _ in store.version }, withheld: [DocumentKey("cars", "a")]) == ["cars": 1])
        #expect(try Self.rows(store) == 2, "the live document and the withheld tombstone")
    }

    @Test("the horizon survives a restart, and a delete-heavy load leaves the store as small as its live documents")
    func persistsAndShrinks() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-reap-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let horizon: VersionVector
        do {
            let store = try Store(directory: directory, options: Store.Options())
            let documents = (0..<2000).map { "({'_id': 'd\($0)', 'make': 'ford', 'notes': '\(String(repeating: "x", count: 200))'})" }
            try store.execute("INSERT INTO cars DOCUMENTS " + documents.joined(separator: ", "))
            try store.execute("DELETE FROM cars WHERE _id != 'd0'")
            let before = try Self.rows(store)
            #expect(try Self.reapAll(store) == ["cars": 1999])
            let after = try Self.rows(store)
            print("tombstone reaping: \(before) rows before, \(after) after")
            #expect(before == 2000 && after == 1)
            horizon = store.reapedHorizon(of: "cars")
            #expect(!horizon.isEmpty)
        }
        let reopened = try Store(directory: directory, options: Store.Options())
        #expect(reopened.reapedHorizon(of: "cars") == horizon)
        #expect(try reopened.execute("SELECT _id FROM cars").items == [["_id": "d0"]])
    }
}
