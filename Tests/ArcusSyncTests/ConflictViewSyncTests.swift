import ArcusCRDT
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Testing

/// The conflict view over real sessions: each side judges a merge by what the other said it
/// had seen of its own writes (`Store.conflictKnowledge`).
@Suite("Conflict view over sessions")
struct ConflictViewSyncTests {
    static func lost(_ store: Store) throws -> [Value] {
        let rows = try store.execute("SELECT conflicts(color) AS lost FROM cars WHERE _id = 'c1'").items
        guard case .array(let lost)? = rows.first?[path: "lost"] else { return [] }
        return lost
    }

    static func color(_ store: Store) throws -> Value? {
        try store.execute("SELECT color FROM cars WHERE _id = 'c1'").items.first?[path: "color"]
    }

    @Test("concurrent writes made apart show the loser on both peers once synced; a later write clears it on both")
    func concurrentWritesOverSessions() async throws {
        // a's wall clock runs a minute behind: its red is ordered before b's blue.
        let a = try Peer("a", clock: { HybridLogicalClock.wallClock() - 60_000 }, conflictsPerField: 4), b = try Peer("b", conflictsPerField: 4)
        for peer in [a, b] { _ = try peer.subscribe("SELECT * FROM cars") }
        _ = try a.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'c1', 'color': 'red'})")
        _ = try b.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'c1', 'color': 'blue'})")

        // The losing value has to reach the winner's side before its own side takes the winner
        // (which overwrites it there): b pulls first, then both.
        var link = connect(a, b, pulling: (false, true))
        #expect(try await eventually { try Self.lost(b.store).count == 1 })
        link.close()
        await link.ended()
        link = connect(a, b)
        #expect(await link.caughtUp())
        for peer in [a, b] {
            #expect(try await eventually { try Self.color(peer.store) == "blue" })
            #expect(try await eventually { try Self.lost(peer.store).count == 1 }, "\(peer.engine.options.name)")
            let loser = try #require(try Self.lost(peer.store).first)
            #expect(loser[path: "value"] == "red")
            #expect(loser[path: "site"] == .string(a.store.site.description))
        }
        #expect(try b.store.execute("SELECT path, value FROM system:conflicts").items == [["path": "color", "value": "red"]])

        // b, having seen red, writes again: cleared there at once, and on a when it arrives.
        _ = try b.store.execute("UPDATE cars SET color = 'green' WHERE _id = 'c1'")
        #expect(try Self.lost(b.store).isEmpty)
        #expect(try await eventually { try Self.color(a.store) == "green" })
        #expect(try await eventually { try Self.lost(a.store).isEmpty })
        #expect(try a.store.execute("SELECT * FROM system:conflicts").items.isEmpty)
        for peer in [a, b] { peer.engine.stop() }
    }

    /// a writes red; b, once it holds red, overwrites it with blue (having seen it); returns once
    /// a holds blue and the link is caught up.
    static func overwriteAfterSeeing(_ a: Peer, _ b: Peer) async throws {
        for peer in [a, b] { _ = try peer.subscribe("SELECT * FROM cars") }
        let link = connect(a, b)
        _ = try a.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'c1', 'color': 'red'})")
        #expect(try await eventually { try Self.color(b.store) == "red" })
        _ = try b.store.execute("UPDATE cars SET color = 'blue' WHERE _id = 'c1'")
        #expect(try await eventually { try Self.color(a.store) == "blue" })
        #expect(await link.caughtUp())
    }

    @Test("a write made after seeing the other's value leaves no conflict on either peer")
    func causalOverwriteOverSessions() async throws {
        let a = try Peer("a", conflictsPerField: 4), b = try Peer("b", conflictsPerField: 4)
        try await Self.overwriteAfterSeeing(a, b)
        for peer in [a, b] { #expect(try Self.lost(peer.store).isEmpty, "\(peer.engine.options.name)") }
        for peer in [a, b] { peer.engine.stop() }
    }

    @Test("a peer that keeps no conflicts (conflicts_per_field 0) says nothing of what it had seen, and its causal overwrite invents no conflict on a peer that keeps them")
    func peerWithoutTheViewInventsNothing() async throws {
        let a = try Peer("a", conflictsPerField: 4), b = try Peer("b", conflictsPerField: 0)
        #expect(a.engine.hello.capabilities.contains("conflicts") && !b.engine.hello.capabilities.contains("conflicts"))
        try await Self.overwriteAfterSeeing(a, b)
        #expect(try Self.lost(a.store).isEmpty)
        #expect(try a.store.execute("SELECT * FROM system:conflicts").items.isEmpty)
        for peer in [a, b] { peer.engine.stop() }
    }
}
