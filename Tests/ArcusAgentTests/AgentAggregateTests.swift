import ArcusCRDT
import AsyncHTTPClient
import Foundation
import Testing

/// Aggregates through the agent's HTTP API: POST /v1/execute and GET /v1/observe.
@Suite("arcus agent: aggregates over the HTTP API")
struct AgentAggregateTests {
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-agent-aggregates-\(UUID().uuidString)").path

    @Test("GROUP BY through /v1/execute, and an observed COUNT(*) that follows an insert")
    func aggregates() async throws {
        defer { try? FileManager.default.removeItem(atPath: data) }
        let agent = try await RunningAgent.launch(data: data)
        defer { agent.dismiss() }
        _ = try await agent.execute("INSERT INTO cars DOCUMENTS ({'_id': 'a', 'make': 'ford'}), ({'_id': 'b', 'make': 'ford'}), ({'_id': 'c', 'make': 'kia'})")
        let grouped = try await agent.execute("SELECT make, COUNT(*) AS n FROM cars GROUP BY make ORDER BY n DESC")
        #expect(grouped.status == 200, "\(grouped.body)")
        #expect(grouped.json == ["items": [["make": "ford", "n": 2], ["make": "kia", "n": 1]], "mutatedDocumentIDs": []])
        let bad = try await agent.execute("SELECT make, _id FROM cars GROUP BY make")
        #expect(bad.status == 400, "\(bad.body)")
        #expect(bad.body.contains("'_id' is neither in GROUP BY nor inside an aggregate"), "\(bad.body)")

        let query = "SELECT COUNT(*) AS n FROM cars WHERE make IN ('ford')"
        var request = agent.authorized(HTTPClientRequest(url: agent.url + "/v1/observe?q=" + query.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!))
        request.headers.add(name: "Accept", value: "text/event-stream")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        #expect(response.status == .ok)
        var events = SSEEvents(response.body.makeAsyncIterator())
        let first = try await events.next()
        #expect(first?[path: ["items"]] == [["n": 2]])
        _ = try await agent.execute("INSERT INTO boats DOCUMENTS ({'_id': 'x', 'make': 'ford'})")
        _ = try await agent.execute("INSERT INTO cars DOCUMENTS ({'_id': 'd', 'make': 'ford'})")
        let second = try await events.next()
        #expect(second?[path: ["items"]] == [["n": 3]], "the boats insert sent nothing; the cars insert sent the new count")
    }
}
