import ArcusAgent
import ArcusCRDT
import Foundation
import Logging
import Prometheus
import Testing

/// `durability`: what an acknowledged write survives. The agent's store commits with the
/// setting, `GET /v1/status` and `arcus status` show it, and `arcus exec --data` takes it too.
@Suite("Agent durability")
struct AgentDurabilityTests {
    private static func scratch(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("arcus-durability-\(name)-\(UUID().uuidString)").path
    }

    @Test("the agent's store commits with PRAGMA synchronous FULL by default, NORMAL with durability normal")
    func storeTakesTheSetting() throws {
        for (durability, level) in [(nil, 2), (Durability.full, 2), (.normal, 1)] as [(Durability?, Int)] {
            let data = Self.scratch("store")
            defer { try? FileManager.default.removeItem(atPath: data) }
            var configuration = AgentConfiguration(dataDirectory: data, name: "durable")
            if let durability { configuration.durability = durability }
            let agent = try Agent(
                configuration: configuration, metricsFactory: PrometheusMetricsFactory(registry: PrometheusCollectorRegistry()),
                logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
            )
            #expect(try agent.store.synchronousLevel() == level, "\(durability.map(\.rawValue) ?? "default")")
        }
    }

    @Test("GET /v1/status and arcus status say the durability: full by default, normal when asked")
    func statusShowsIt() async throws {
        for (extra, expected) in [([], "full"), (["--durability", "normal"], "normal")] as [([String], String)] {
            let data = Self.scratch("status")
            defer { try? FileManager.default.removeItem(atPath: data) }
            let agent = try await RunningAgent.launch(data: data, extra)
            defer { agent.dismiss() }
            let reply = try await agent.request(.GET, "/v1/status")
            guard case .object(let status) = try Value(json: reply.body) else {
                Issue.record("not an object: \(reply.body)")
                continue
            }
            #expect(status["durability"] == .string(expected), "\(reply.body.prefix(300))")
            let printed = try await ArcusProcess.run(["status", "--agent", agent.url], environment: ["ARCUS_TOKEN": agent.token])
            #expect(printed.status == 0, "\(printed.standardError)")
            #expect(printed.standardOutput.split(separator: "\n").contains { $0.hasPrefix("durability") && $0.hasSuffix(" \(expected)") },
                    "\(printed.standardOutput)")
        }
    }

    @Test("--durability other than full or normal stops the agent before it starts, naming both")
    func badValue() async throws {
        let data = Self.scratch("bad")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let outcome = try await ArcusProcess.run(["agent", "--data", data, "--http", "127.0.0.1:0", "--durability", "fast"])
        #expect(outcome.status == 2, "\(outcome.standardError)")
        #expect(outcome.standardError.contains("--durability must be full (") && outcome.standardError.contains("or normal ("),
                "\(outcome.standardError)")
        #expect(outcome.standardError.contains(#"got "fast""#), "\(outcome.standardError)")
    }

    @Test("arcus exec --data takes --durability full or normal, refuses anything else, and refuses it with --agent")
    func exec() async throws {
        let data = Self.scratch("exec")
        defer { try? FileManager.default.removeItem(atPath: data) }
        for durability in ["full", "normal"] {
            let outcome = try await ArcusProcess.run(["exec", "--data", data, "--durability", durability, "INSERT INTO cars DOCUMENTS ({'_id': '\(durability)'})"])
            #expect(outcome.status == 0, "\(outcome.standardError)")
        }
        let bad = try await ArcusProcess.run(["exec", "--data", data, "--durability", "off", "SELECT * FROM cars"])
        #expect(bad.status == 2 && bad.standardError.contains("--durability must be full ("), "\(bad.standardError)")
        let withAgent = try await ArcusProcess.run(["exec", "--agent", "http://127.0.0.1:1", "--durability", "full", "SELECT * FROM cars"])
        #expect(withAgent.status != 0 && withAgent.standardError.contains("--durability goes with --data"), "\(withAgent.standardError)")
        let select = try await ArcusProcess.run(["exec", "--data", data, "SELECT * FROM cars ORDER BY _id"])
        #expect(try Value(json: select.standardOutput) == ["items": [["_id": "full"], ["_id": "normal"]], "mutatedDocumentIDs": []])
    }
}
