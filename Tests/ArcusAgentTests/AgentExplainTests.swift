import ArcusCRDT
import AsyncHTTPClient
import Foundation
import Testing

/// EXPLAIN and PROFILE through the agent's HTTP API: POST /v1/execute and GET /v1/observe.
@Suite("arcus agent: EXPLAIN and PROFILE over the HTTP API")
struct AgentExplainTests {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-agent-explain-\(UUID().uuidString)").path

    @Test("EXPLAIN and PROFILE answer with the plan; PROFILE of a write and an observed EXPLAIN are refused")
    func explainOverHTTP() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        let agent = try await RunningAgent.launch(data: data)
        defer { agent.dismiss() }
        _ = try await agent.execute("INSERT INTO cars DOCUMENTS ({'_id': 'a', 'make': 'ford'}), ({'_id': 'b', 'make': 'kia'})")
        _ = try await agent.execute("CREATE INDEX cars_make ON cars (make)")
        let explained = try await agent.execute("EXPLAIN SELECT * FROM cars WHERE make = 'ford'")
        #expect(explained.status == 200, "\(explained.body)")
        guard case .array(let items)? = explained.json?[path: ["items"]], let plan = items.first else {
            Issue.record("no plan in \(explained.body)")
            return
        }
        #expect(plan[path: ["access", "index"]] == "cars_make")
        #expect(plan[path: ["estimated_rows"]] == 1)
        let profiled = try await agent.execute("PROFILE SELECT * FROM cars")
        #expect(profiled.status == 200, "\(profiled.body)")
        guard case .array(let profiles)? = profiled.json?[path: ["items"]] else {
            Issue.record("no plan in \(profiled.body)")
            return
        }
        #expect(profiles.first?[path: ["actual_rows", "rows_returned"]] == 2, "\(profiled.body)")

        let refused = try await agent.execute("PROFILE DELETE FROM cars")
        #expect(refused.status == 400, "\(refused.body)")
        #expect(refused.body.contains("PROFILE runs SELECTs only; use EXPLAIN to see a write's plan"), "\(refused.body)")
        let count = try await agent.execute("SELECT COUNT(*) AS n FROM cars")
        #expect(count.json?[path: ["items"]] == [["n": 2]], "nothing was deleted: \(count.body)")

        let query = "EXPLAIN SELECT * FROM cars"
        let request = agent.authorized(HTTPClientRequest(url: agent.url + "/v1/observe?q=" + query.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let body = String(buffer: try await response.body.collect(upTo: 1 << 16))
        #expect(response.status == .badRequest, "\(body)")
        #expect(body.contains("observe the SELECT itself"), "\(body)")
    }
}
