import ArcusCRDT
import ArcusTestSupport
import Foundation
import Testing

/// Reaped tombstones between two agent processes over LAN TCP, as an operator meets them: a
/// device away while documents were removed and reaped (`tombstone_lifetime_s`) comes back, and
/// nothing removed comes back with it.
@Suite(.serialized)
struct AgentTombstoneTests {
    static func stored(_ agent: RunningAgent) async throws -> (documents: Int64, removed: Int64) {
        let row = try await agent.execute("SELECT documents, removed FROM system:collections WHERE _id = 'cars'").json?[path: ["items"]]
        guard case .array(let rows)? = row, case .object(let fields)? = rows.first,
              case .int(let documents)? = fields["documents"], case .int(let removed)? = fields["removed"] else { return (0, 0) }
        return (documents, removed)
    }

    @Test("delete, reap (ALTER SYSTEM SET tombstone_lifetime_s = 1), restart the agent that was away: the removed documents stay removed on both, its write made meanwhile survives")
    func awayPastTheLifetime() async throws {
        let scratch = try MeshScratch("tombstones")
        defer { scratch.remove() }
        let port = try freePort()
        let lan = ["--config", scratch.config.path, "--transports", "lan", "--subscribe", "SELECT * FROM cars"]
        let (aData, bData) = (scratch.data("a"), scratch.data("b"))
        let a = try await RunningAgent.launch(data: aData, lan + ["--listen", "127.0.0.1:\(port)"])
        defer { a.dismiss() }
        var b = try await RunningAgent.launch(data: bData, lan + ["--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(port)"])
        _ = try await a.execute("INSERT INTO cars DOCUMENTS ({'_id': 'gone', 'make': 'ford'}), ({'_id': 'edited', 'make': 'audi'}), ({'_id': 'live', 'make': 'kia'})")
        #expect(try await b.wait(until: "SELECT * FROM cars WHERE _id = 'live'", contains: "kia").found, "\(b.log)")
        #expect(await b.halt() == 0)

        // While b is away: a removes two documents; b, offline, edits one of them.
        _ = try await a.execute("DELETE FROM cars WHERE _id IN ['gone', 'edited']")
        let offline = try await ArcusProcess.run(["exec", "--data", bData, "UPDATE cars SET color = 'blue' WHERE _id = 'edited'"])
        #expect(offline.status == 0, "\(offline.standardError)")
        let before = try await Self.stored(a)
        #expect(before == (1, 2))
        try await Task.sleep(for: .seconds(2))
        let set = try await a.execute("ALTER SYSTEM SET tombstone_lifetime_s = 1")
        #expect(set.status == 200, "\(set.body)")
        let reaped = await eventually { (try? await Self.stored(a)) ?? (0, 0) == (1, 0) }
        #expect(reaped, "the tombstones were not reaped: \(a.log)")
        #expect(a.log.contains("reaped tombstones"), "\(a.log)")

        // b comes back: it learns a's horizon and drops what a reaped; its edit arrives alone.
        b = try await RunningAgent.launch(data: bData, lan + ["--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(port)"])
        defer { b.dismiss() }
        let expected: Value = [["_id": "edited", "color": "blue"], ["_id": "live", "make": "kia"]]
        let onB = await eventually { (try? await b.execute("SELECT * FROM cars ORDER BY _id").json?[path: ["items"]]) == expected }
        let bHolds = try await b.execute("SELECT * FROM cars ORDER BY _id").body
        #expect(onB, "\(bHolds)\n\(b.log)")
        let onA = await eventually { (try? await a.execute("SELECT * FROM cars ORDER BY _id").json?[path: ["items"]]) == expected }
        let aHolds = try await a.execute("SELECT * FROM cars ORDER BY _id").body
        #expect(onA, "\(aHolds)")
        #expect(b.log.contains("removed on"), "\(b.log)")
    }
}
