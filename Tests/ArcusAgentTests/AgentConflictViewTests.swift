import ArcusCRDT
import ArcusStore
import ArcusTestSupport
import Foundation
import Testing

/// The conflict view through the agent's HTTP API (POST /v1/execute): `conflicts(path)` and
/// `system:conflicts`, with a mistake in the call answered 400.
@Suite("arcus agent: the conflict view over the HTTP API")
struct AgentConflictViewTests {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-agent-conflicts-\(UUID().uuidString)").path

    @Test("with conflicts_per_field set, conflicts(path) and system:conflicts show a kept loser; conflicts(1) is a 400 that says what to write; without it, reading them is a 400 that says how to turn the view on")
    func conflictViewOverHTTP() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        // The data directory's store merged a concurrent write before the agent started: red
        // (another device, written first) lost to blue.
        var keeping = Store.Options()
        keeping.conflictsPerField = 4
        let other = try Store(inMemory: keeping)
        _ = try other.execute("INSERT INTO cars DOCUMENTS ({'_id': 'a', 'color': 'red'})")
        try await Task.sleep(for: .milliseconds(5))
        do {
            let store = try Store(directory: URL(fileURLWithPath: data), options: keeping)
            _ = try store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'a', 'color': 'blue'})")
            try store.merge(other.changes(after: 0, since: .empty, to: store.site).batch, sayingWhatItSaw: true)
        }
        // The default keeps none: reading them, where none were kept, says how to keep them.
        do {
            let empty = data + "-off"
            defer { try? FileManager.default.removeItem(atPath: empty) }
            let off = try await RunningAgent.launch(data: empty)
            let answer = try await off.execute("SELECT conflicts(color) FROM cars")
            #expect(answer.status == 400 && answer.body.contains("set conflicts_per_field"), "\(answer.body)")
            #expect(await off.halt() == 0)
        }
        let config = data + "-config.json"
        try Data(#"{"conflicts_per_field": 4}"#.utf8).write(to: URL(fileURLWithPath: config))
        defer { try? FileManager.default.removeItem(atPath: config) }
        let agent = try await RunningAgent.launch(data: data, ["--config", config])
        defer { agent.dismiss() }

        let viewed = try await agent.execute("SELECT _id, color, conflicts(color) AS lost FROM cars WHERE length(conflicts(color)) > 0")
        #expect(viewed.status == 200, "\(viewed.body)")
        let row = try #require(viewed.json?[path: ["items"]].flatMap { if case .array(let items) = $0 { items.first } else { nil } }, "\(viewed.body)")
        #expect(row[path: ["color"]] == "blue")
        guard case .array(let lost)? = row[path: ["lost"]], let loser = lost.first else {
            Issue.record("no loser in \(viewed.body)")
            return
        }
        #expect(lost.count == 1)
        #expect(loser[path: ["value"]] == "red")
        #expect(loser[path: ["site"]] == .string(other.site.description))
        #expect(loser[path: ["written_at"]]?.stringValue?.hasSuffix("Z") == true)

        let rows = try await agent.execute("SELECT document_id, path, value FROM system:conflicts WHERE collection = 'cars'")
        #expect(rows.json?[path: ["items"]] == [["document_id": "a", "path": "color", "value": "red"]], "\(rows.body)")

        let refused = try await agent.execute("SELECT conflicts(1) FROM cars")
        #expect(refused.status == 400, "\(refused.body)")
        #expect(refused.body.contains("conflicts takes a field path"), "\(refused.body)")

        // A write through the agent clears it.
        _ = try await agent.execute("UPDATE cars SET color = 'green' WHERE _id = 'a'")
        let cleared = try await agent.execute("SELECT * FROM system:conflicts")
        #expect(cleared.json?[path: ["items"]] == [], "\(cleared.body)")
    }

    static func lost(_ agent: RunningAgent) async throws -> [Value] {
        let rows = try await agent.execute("SELECT conflicts(color) AS lost FROM cars WHERE _id = 'c1'").json?[path: ["items"]]
        guard case .array(let items)? = rows, case .array(let lost)? = items.first?[path: ["lost"]] else { return [] }
        return lost
    }

    @Test("two agents over LAN, both keeping conflicts: b, offline, overwrites the value a wrote meanwhile; b takes in a's value first and shows it lost; once a subscribes it shows its lost value with its site; b's next write, made after seeing it, clears it on a")
    func concurrentWritesBetweenAgents() async throws {
        let scratch = try MeshScratch("conflicts")
        defer { scratch.remove() }
        let config = scratch.directory.appendingPathComponent("conflicts.json")
        let secret = scratch.directory.appendingPathComponent("secret").path
        try Data(#"{"mesh_secret_file": "\#(secret)", "conflicts_per_field": 4}"#.utf8).write(to: config)
        let port = try freePort()
        // a serves, subscribing to nothing until the end, so that which side merges first is
        // set by the test, not by a race: a device that merges the winner before sending its own
        // value never sends it (Docs/Conflicts.md), and b could then never see it lost.
        let lan = ["--config", config.path, "--transports", "lan"]
        let (aData, bData) = (scratch.data("a"), scratch.data("b"))
        let a = try await RunningAgent.launch(data: aData, lan + ["--listen", "127.0.0.1:\(port)"])
        defer { a.dismiss() }
        let bArguments = lan + ["--subscribe", "SELECT * FROM cars", "--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(port)"]
        var b = try await RunningAgent.launch(data: bData, bArguments)
        _ = try await a.execute("INSERT INTO cars DOCUMENTS ({'_id': 'c1', 'color': 'white'})")
        #expect(try await b.wait(until: "SELECT * FROM cars", contains: "white").found, "\(b.log)")
        #expect(await b.halt() == 0)

        // Apart: a writes red, then b, offline, blue (later, so blue wins), neither seeing the other.
        _ = try await a.execute("UPDATE cars SET color = 'red' WHERE _id = 'c1'")
        try await Task.sleep(for: .milliseconds(20))
        let offline = try await ArcusProcess.run(["exec", "--data", bData, "UPDATE cars SET color = 'blue' WHERE _id = 'c1'"])
        #expect(offline.status == 0, "\(offline.standardError)")

        // They meet: b takes in a's red, which loses to its blue, and keeps it.
        b = try await RunningAgent.launch(data: bData, bArguments)
        defer { b.dismiss() }
        let bSawRed = await eventually { ((try? await Self.lost(b)) ?? []).contains { $0[path: ["value"]] == "red" } }
        #expect(bSawRed, "b never received a's red: \(b.log)")
        #expect(try await b.execute("SELECT color FROM cars").body.contains("blue"))

        // a subscribes and takes in blue: b's delta says b had not seen red, so a keeps it.
        let subscribed = try await a.request(.POST, "/v1/subscriptions", body: #"{"query": "SELECT * FROM cars"}"#)
        #expect(subscribed.status == 201, "\(subscribed.body)")
        #expect(try await a.wait(until: "SELECT color FROM cars", contains: "blue").found, "\(a.log)")
        let shown = await eventually { ((try? await Self.lost(a)) ?? []).count == 1 }
        let lost = try await Self.lost(a)
        #expect(shown, "\(lost)")
        #expect(lost.first?[path: ["value"]] == "red")
        #expect(lost.first?[path: ["site"]] == .string(String(a.peer.prefix(16))), "\(lost) a=\(a.peer)")

        // b writes again, having seen red: a's kept value goes when that write arrives.
        _ = try await b.execute("UPDATE cars SET color = 'green' WHERE _id = 'c1'")
        #expect(try await a.wait(until: "SELECT color FROM cars", contains: "green").found)
        let cleared = await eventually { ((try? await Self.lost(a)) ?? [1]).isEmpty }
        let left = try await Self.lost(a)
        #expect(cleared, "\(left)")
    }
}
