import ArcusCRDT
import ArcusStore
import Foundation
import Testing

/// The conflict view through the agent's HTTP API (POST /v1/execute): `conflicts(path)` and
/// `system:conflicts`, with a mistake in the call answered 400.
@Suite("arcus agent: the conflict view over the HTTP API")
struct AgentConflictViewTests {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-agent-conflicts-\(UUID().uuidString)").path

    @Test("conflicts(path) and system:conflicts show a kept loser; conflicts(1) is a 400 that says what to write")
    func conflictViewOverHTTP() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        // The data directory's store merged a concurrent write before the agent started: red
        // (another device, written first) lost to blue.
        let other = try Store(inMemory: Store.Options())
        _ = try other.execute("INSERT INTO cars DOCUMENTS ({'_id': 'a', 'color': 'red'})")
        try await Task.sleep(for: .milliseconds(5))
        do {
            let store = try Store(directory: URL(fileURLWithPath: data))
            _ = try store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'a', 'color': 'blue'})")
            try store.merge(other.changes(after: 0, since: .empty, to: store.site).batch)
        }
        let agent = try await RunningAgent.launch(data: data)
        defer { agent.stop() }

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
}
