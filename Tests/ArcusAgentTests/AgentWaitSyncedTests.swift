import ArcusCRDT
import ArcusTestSupport
import Foundation
import Testing

/// `arcus exec --wait-synced`: a write answered only once the peers named hold it, between two
/// agent processes over LAN TCP; and, with a peer gone, a clear failure after the timeout.
@Suite(.serialized)
struct AgentWaitSyncedTests {
    static func exec(_ agent: RunningAgent, data: String, _ extra: [String], _ statement: String) async throws -> ArcusProcess.Outcome {
        try await ArcusProcess.run(["exec", "--agent", agent.url, "--token-file", data + "/api-token"] + extra + [statement])
    }

    @Test("a write with --wait-synced returns once the peer named (by id or by name) holds it; an unknown name is refused; with the peer stopped it fails after --timeout naming it, the write kept here")
    func waitSynced() async throws {
        let scratch = try MeshScratch("wait-synced")
        defer { scratch.remove() }
        let port = try freePort()
        let lan = ["--config", scratch.config.path, "--transports", "lan"]
        let (aData, bData) = (scratch.data("a"), scratch.data("b"))
        let b = try await RunningAgent.launch(data: bData, lan + ["--listen", "127.0.0.1:\(port)", "--subscribe", "SELECT * FROM cars", "--name", "truck-b"])
        defer { b.dismiss() }
        let a = try await RunningAgent.launch(data: aData, lan + ["--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(port)"])
        defer { a.dismiss() }
        // Linked and synced once (b's subscription reached a), so that the waits below time the write.
        _ = try await a.execute("INSERT INTO cars DOCUMENTS ({'_id': 'first'})")
        #expect(try await b.wait(until: "SELECT * FROM cars", contains: "first").found, "\(a.log)\n\(b.log)")

        let byID = try await Self.exec(a, data: aData, ["--wait-synced", b.peer, "--timeout", "30"], "INSERT INTO cars DOCUMENTS ({'_id': 'x1', 'make': 'volvo'})")
        #expect(byID.status == 0, "\(byID.standardError)")
        let answer = try Value(json: byID.standardOutput)
        #expect(answer[path: "synced"] == [.string(b.peer)])
        guard case .int(let commit)? = answer[path: "commit_id"] else { Issue.record("no commit_id: \(byID.standardOutput)"); return }
        #expect(commit > 1)
        // Held means there already: no waiting on b's side.
        #expect(try await b.execute("SELECT * FROM cars WHERE _id = 'x1'").body.contains("volvo"))
        // The same, as system:data_sync_info shows it; and the agent's other system collections.
        let info = try #require(try await a.execute("SELECT * FROM system:data_sync_info WHERE _id = '\(b.peer)'").json?[path: "items"])
        guard case .array(let rows) = info, case .object(let row)? = rows.first else { Issue.record("\(info)"); return }
        #expect(row["name"] == "truck-b" && row["sync_session_status"] == "connected", "\(row)")
        if case .int(let acknowledged)? = row["synced_up_to_local_commit_id"] { #expect(acknowledged >= commit) } else { Issue.record("\(row)") }
        #expect(try await b.execute("SELECT last_update_received_time FROM system:data_sync_info").body.contains("last_update_received_time\":1"))
        let system = try await a.execute("SELECT _id, documents, latest_commit_id FROM system:system_info").body
        #expect(system.contains(a.peer) && system.contains(#""cars":2"#), "\(system)")
        #expect(try await a.execute("SELECT _id FROM system:peers WHERE name = 'truck-b'").body.contains(b.peer))
        #expect(try await a.execute("INSERT INTO system:peers DOCUMENTS ({'_id': 'x'})").status == 400)

        let byName = try await Self.exec(a, data: aData, ["--wait-synced", "truck-b"], "UPDATE cars SET make = 'saab' WHERE _id = 'x1'")
        #expect(byName.status == 0, "\(byName.standardError)")
        #expect(try await b.execute("SELECT * FROM cars WHERE _id = 'x1'").body.contains("saab"))

        let unknown = try await Self.exec(a, data: aData, ["--wait-synced", "nobody"], "UPDATE cars SET make = 'fiat' WHERE _id = 'x1'")
        #expect(unknown.status == 2)
        #expect(unknown.standardError.contains("no peer named nobody"), "\(unknown.standardError)")

        // `arcus observe` of system:data_sync_info: the session with b, and b gone when it stops.
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-observe-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        let observer = try ArcusProcess.start(
            ["observe", "--agent", a.url, "--token-file", aData + "/api-token", "SELECT _id, sync_session_status FROM system:data_sync_info"], output: output
        )
        defer { observer.dismiss() }
        func observed() -> [Value] {
            ((try? String(contentsOf: output, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { try? Value(json: String($0)) }
        }
        let connected: Value = [["_id": .string(b.peer), "sync_session_status": "connected"]]
        #expect(await eventually { observed().first?[path: "items"] == connected }, "\(observed())")

        #expect(await b.halt() == 0)
        // A stopped peer leaves the presence graph, and with it the rows.
        #expect(await eventually { observed().last?[path: "items"] == [] }, "\(observed())")
        #expect(observed().last?[path: ["diff", "deletions"]] == [0])
        let started = Date()
        let gone = try await Self.exec(a, data: aData, ["--wait-synced", b.peer, "--timeout", "2"], "UPDATE cars SET make = 'audi' WHERE _id = 'x1'")
        #expect(gone.status == 1, "\(gone.standardOutput)")
        #expect(gone.standardError.contains("not yet held") && gone.standardError.contains(b.peer), "\(gone.standardError)")
        #expect(Date().timeIntervalSince(started) >= 2)
        #expect(try await a.execute("SELECT make FROM cars WHERE _id = 'x1'").body.contains("audi"))
    }
}
