import ArcusCRDT
import ArcusCodec
import ArcusStore
@testable import ArcusSync
import ArcusTestSupport
import Foundation
import Testing

/// Reaped tombstones over real sessions (Docs/Sync.md "Reaped tombstones"): a peer away while
/// documents were removed and their tombstones reaped comes back, and nothing removed comes
/// back with it — on the reaper, on the peer, or on a third peer that only ever meets the peer.
@Suite("Reaped tombstones between peers")
struct TombstoneReapingSyncTests {
    static func subscribed(_ name: String) throws -> Peer {
        let peer = try Peer(name)
        _ = try peer.subscribe("SELECT * FROM cars")
        return peer
    }

    static func rows(_ store: Store) throws -> Int {
        // Live documents and tombstones: every row the collection keeps.
        let row = try store.execute("SELECT documents, removed FROM system:collections WHERE _id = 'cars'").items.first
        guard case .int(let live)? = row?[path: "documents"], case .int(let removed)? = row?[path: "removed"] else { return 0 }
        return Int(live + removed)
    }

    @Test("delete, reap, reconnect a peer that was away past the lifetime: nothing comes back, a write the removal had not seen survives, and the peer passes the horizon on")
    func awayPastTheLifetime() async throws {
        let reaper = try Self.subscribed("reaper"), away = try Self.subscribed("away"), third = try Self.subscribed("third")
        try reaper.store.execute("""
            INSERT INTO cars DOCUMENTS ({'_id': 'gone', 'make': 'ford'}), ({'_id': 'edited', 'make': 'audi', 'year': 2001}),
            ({'_id': 'live', 'make': 'kia'})
            """)
        // Everyone has everything; then the two others go away.
        for peer in [away, third] {
            let link = connect(reaper, peer)
            #expect(await link.caughtUp())
            #expect(try await eventually { try ids(peer.store, "cars") == ["edited", "gone", "live"] })
            link.close()
            await link.ended()
        }

        try reaper.store.execute("DELETE FROM cars WHERE _id IN ['gone', 'edited']")
        try away.store.execute("UPDATE cars SET color = 'blue' WHERE _id = 'edited'")   // unaware of the removal
        try await Task.sleep(for: .milliseconds(5))   // removed before now: a lifetime of zero reaps them
        #expect(try reaper.engine.reapTombstones(olderThan: .zero) == ["cars": 2])
        #expect(try Self.rows(reaper.store) == 1, "only the live document's row is left")

        // The peer that was away comes back: it learns the horizon, asks about what it holds
        // under it, and drops what the reaper reaped; its own write comes through, alone.
        let back = connect(reaper, away)
        #expect(await back.caughtUp())
        #expect(try await eventually { try ids(away.store, "cars") == ["edited", "live"] }, "\((try? contents(away.store, "cars")) ?? [])")
        #expect(try await eventually { try contents(reaper.store, "cars") == contents(away.store, "cars") }, "\((try? contents(reaper.store, "cars")) ?? [])")
        #expect(try away.store.execute("SELECT * FROM cars WHERE _id = 'edited'").items == [["_id": "edited", "color": "blue"]])
        #expect(try ids(reaper.store, "cars") == ["edited", "live"])
        #expect(away.store.reapedHorizon(of: "cars") == reaper.store.reapedHorizon(of: "cars"))
        #expect(away.log.contains(.info, "removed on"))

        // The third peer never meets the reaper: the peer that came back brings it forward.
        let relay = connect(away, third)
        #expect(await relay.caughtUp())
        #expect(try await eventually { try contents(third.store, "cars") == contents(away.store, "cars") }, "\((try? contents(third.store, "cars")) ?? [])")
        // Nothing of the removed documents went back the other way either.
        try await Task.sleep(for: .milliseconds(200))
        #expect(try ids(away.store, "cars") == ["edited", "live"])
        #expect(try away.store.execute("SELECT * FROM cars WHERE _id = 'edited'").items == [["_id": "edited", "color": "blue"]])
        for peer in [reaper, away, third] { peer.engine.stop() }
    }

    @Test("more documents to check than one message holds: the check goes a chunk at a time, and every removed one goes")
    func manyChunks() async throws {
        let reaper = try Self.subscribed("reaper"), away = try Self.subscribed("away")
        try reaper.store.insertOrders(0..<1_100, collection: "cars")
        let first = connect(reaper, away)
        #expect(await first.caughtUp())
        #expect(try await eventually { try ids(away.store, "cars").count == 1_100 })
        first.close()
        await first.ended()
        try reaper.store.execute("DELETE FROM cars WHERE n >= 50")
        try await Task.sleep(for: .milliseconds(5))
        #expect(try reaper.engine.reapTombstones(olderThan: .zero) == ["cars": 1_050])

        let back = connect(reaper, away)
        #expect(await back.caughtUp())
        #expect(try await eventually { try ids(away.store, "cars").count == 50 }, "\((try? ids(away.store, "cars").count) ?? -1)")
        #expect(try await eventually { away.store.reapedHorizon(of: "cars") == reaper.store.reapedHorizon(of: "cars") })
        for peer in [reaper, away] { peer.engine.stop() }
    }

    @Test("a peer that may not write the collection cannot make another drop documents with a horizon")
    func onlyWritersReap() async throws {
        let reaper = try Self.subscribed("reaper"), away = try Self.subscribed("away")
        try reaper.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'gone'}), ({'_id': 'live'})")
        let first = connect(reaper, away)
        #expect(await first.caughtUp())
        #expect(try await eventually { try ids(away.store, "cars") == ["gone", "live"] })
        first.close()
        await first.ended()
        try reaper.store.execute("DELETE FROM cars WHERE _id = 'gone'")
        try await Task.sleep(for: .milliseconds(5))   // removed before now: a lifetime of zero reaps it
        #expect(try reaper.engine.reapTombstones(olderThan: .zero) == ["cars": 1])

        // `away` lets the reaper read cars but not write them.
        var readOnly = SyncPermissions.all
        readOnly.write = SyncPermissions.Collections.none
        let back = connect(reaper, away, permissions: (.all, readOnly))
        #expect(await back.caughtUp())
        #expect(await eventually { away.log.contains(.warning, "which it may not write") }, "\(away.log.all.map(\.1))\n\(reaper.log.all.map(\.1))")
        #expect(try ids(away.store, "cars") == ["gone", "live"], "kept: the word came from a peer that may not remove them")
        for peer in [reaper, away] { peer.engine.stop() }
    }
}
