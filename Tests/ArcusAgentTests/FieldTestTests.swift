import ArcusAgent
import ArcusBench
import ArcusCRDT
import ArcusTestSupport
import Foundation
import Testing

/// `arcus field-test` against two agent processes linked over LAN on 127.0.0.1, and
/// Tools/field-report.py on what it recorded.
@Suite(.serialized)
struct FieldTestTests {
    @Test("field-test records the other peer's LAN link between start and end events, and field-report.py draws it")
    func recordsLinksAndReports() async throws {
        let scratch = try MeshScratch("field")
        defer { scratch.remove() }
        let port = try freePort()
        let lan = ["--config", scratch.config.path, "--transports", "lan", "--subscribe", "SELECT * FROM cars"]
        let listener = try await RunningAgent.launch(data: scratch.data("b"), lan + ["--listen", "127.0.0.1:\(port)", "--name", "field-listener"])
        defer { listener.dismiss() }
        let dialler = try await RunningAgent.launch(
            data: scratch.data("a"), lan + ["--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(port)", "--name", "field-dialler"]
        )
        defer { dialler.dismiss() }
        _ = try await dialler.execute("INSERT INTO cars DOCUMENTS ({'_id': 'field-1', 'make': 'volvo'})")
        let (arrived, seen) = try await listener.wait(until: "SELECT * FROM cars", contains: "field-1")
        try #require(arrived, "the agents never linked: \(seen)\n\(dialler.log)\n\(listener.log)")
        // The link's RTT is measured after it comes up; once known, the graph keeps it.
        let measured = try await Self.waitForRTT(of: dialler)
        let graph = try await dialler.request(.GET, "/v1/peers").body
        try #require(measured, "the dialler's LAN link never had an RTT: \(graph)")

        let log = scratch.directory.appendingPathComponent("dialler.jsonl")
        let run = try await ArcusProcess.run(
            ["field-test", "--agent", dialler.url, "--seconds", "3", "--interval", "0.5", "--out", log.path]
        )
        #expect(run.status == 0, "\(run.standardError)")
        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map { try Value(json: String($0)) }
        let events = lines.compactMap { $0.objectValue?["event"]?.stringValue }
        #expect(events.first == "start" && events.last == "end", "\(events)")
        #expect(lines.first?.objectValue?["agent"] == "field-dialler")
        let samples = lines.compactMap(\.objectValue).filter { $0["event"] == nil }
        #expect(samples.count >= 4, "\(lines)")
        for sample in samples {
            #expect(sample["peer"]?.stringValue == listener.peer && sample["transport"] == "lan", "\(sample)")
            #expect(sample["agent_peer"]?.stringValue == dialler.peer)
            #expect(sample["peer_name"] == "field-listener")
            #expect(sample["rtt_ms"]?.numberValue != nil, "\(sample)")
            #expect((sample["reconnects"]?.numberValue ?? -1) >= 0 && (sample["failovers"]?.numberValue ?? -1) >= 0)
            #expect(sample["rssi_dbm"] == .null)
        }
        // Goodput needs an interval: null on the first reading, a figure from then on.
        #expect(samples.first?["goodput_bps"] == .null)
        #expect(samples.dropFirst().allSatisfy { $0["goodput_bps"]?.numberValue != nil }, "\(samples)")

        let html = scratch.directory.appendingPathComponent("report.html")
        let report = try Self.fieldReport([log.path, "--out", html.path])
        #expect(report.status == 0, "\(report.standardError)")
        let page = try String(contentsOf: html, encoding: .utf8)
        #expect(page.contains("<svg") && page.contains("field-listener") && page.contains("lan"))
        let stopped = (await dialler.halt(), await listener.halt())
        #expect(stopped.0 == 0 && stopped.1 == 0)
    }

    @Test("field-test with no agent at the URL exits 1 and writes no log; with --seconds 0 or --interval 0 it exits 2")
    func refusesBadStarts() async throws {
        let scratch = try MeshScratch("field-errors")
        defer { scratch.remove() }
        let log = scratch.directory.appendingPathComponent("none.jsonl").path
        let nobody = "http://127.0.0.1:\(try freePort())"
        let unreachable = try await ArcusProcess.run(["field-test", "--agent", nobody, "--seconds", "1", "--out", log])
        #expect(unreachable.status == 1)
        #expect(unreachable.standardError.contains("no agent at \(nobody)"), "\(unreachable.standardError)")
        #expect(!FileManager.default.fileExists(atPath: log))
        let zero = try await ArcusProcess.run(["field-test", "--agent", nobody, "--seconds", "0", "--out", log])
        #expect(zero.status == 2 && zero.standardError.contains("--seconds"), "\(zero.standardError)")
        let still = try await ArcusProcess.run(["field-test", "--agent", nobody, "--seconds", "1", "--interval", "0", "--out", log])
        #expect(still.status == 2 && still.standardError.contains("--interval"), "\(still.standardError)")
        let nowhere = try await ArcusProcess.run(["field-test", "--agent", nobody, "--seconds", "1", "--out", "/nonexistent/field.jsonl"])
        #expect(nowhere.status == 2 && nowhere.standardError.contains("--out"), "\(nowhere.standardError)")
    }

    @Test("field-report.py exits 2 for a missing log and for one with no samples, and skips malformed lines with a warning")
    func reportRefusesEmptyInput() throws {
        let scratch = try MeshScratch("field-report")
        defer { scratch.remove() }
        let html = scratch.directory.appendingPathComponent("report.html").path
        let missing = try Self.fieldReport([scratch.directory.appendingPathComponent("absent.jsonl").path, "--out", html])
        #expect(missing.status == 2 && missing.standardError.contains("absent.jsonl"), "\(missing.standardError)")

        let empty = scratch.directory.appendingPathComponent("empty.jsonl")
        try Data(#"{"t": 0, "event": "start", "agent": "a"}"#.utf8).write(to: empty)
        let nothing = try Self.fieldReport([empty.path, "--out", html])
        #expect(nothing.status == 2 && nothing.standardError.contains("no samples"), "\(nothing.standardError)")

        let mixed = scratch.directory.appendingPathComponent("mixed.jsonl")
        try Data("""
            {"t": 0, "agent": "pump-1", "agent_peer": "p1", "peer": "p2", "peer_name": "pump-2", "transport": "bluetooth", "active": true, "rtt_ms": 17, "goodput_bps": null, "reconnects": 0, "failovers": 0}
            not json
            {"t": 1, "agent": "pump-1", "agent_peer": "p1", "peer": "p2", "peer_name": "pump-2", "transport": "bluetooth", "active": true, "rtt_ms": 19, "goodput_bps": 1200, "reconnects": 1, "failovers": 0}

            """.utf8).write(to: mixed)
        let skipped = try Self.fieldReport([mixed.path, "--out", html])
        #expect(skipped.status == 0 && skipped.standardError.contains("1 malformed"), "\(skipped.standardError)")
        #expect(try String(contentsOfFile: html, encoding: .utf8).contains("pump-2"))
    }

    @Test("the recorder writes this agent's links only, goodput over the interval per transport, and counts from the start")
    func recorderFigures() throws {
        func reading(bytes: Int, accepted: Int, failovers: Int, rtt: String) throws -> AgentReading {
            let status = """
                {"name": "pump-1", "peer": "p1", "graph": {"peers": [{"id": "p1", "name": "pump-1"}, {"id": "p2", "name": "pump-2"}, {"id": "p3"}],
                 "links": [{"a": "p1", "b": "p2", "transport": "bluetooth", "active": true, "rtt_ms": \(rtt), "throughput": 108800},
                           {"a": "p2", "b": "p3", "transport": "lan", "active": true, "rtt_ms": 1, "throughput": null}]}}
                """
            let metrics = """
                arcus_link_bytes_total{transport="bluetooth",direction="sent"} \(bytes)
                arcus_link_bytes_total{transport="bluetooth",direction="received"} \(bytes)
                arcus_handshakes_total{transport="bluetooth",result="accepted"} \(accepted)
                arcus_handshakes_total{transport="bluetooth",result="refused"} 7
                arcus_failovers_total{transport="bluetooth"} \(failovers)
                """
            return try AgentReading(status: status, metrics: metrics)
        }
        let settings = FieldRecorder.Settings(agentURL: "http://127.0.0.1:4747", seconds: 10, interval: 2, output: "pump-1.jsonl")
        var recorder = FieldRecorder(baseline: try reading(bytes: 1000, accepted: 3, failovers: 1, rtt: "17"), settings: settings)
        #expect(recorder.startLine(time: Date()).objectValue?["event"] == "start")
        let first = recorder.samples(of: try reading(bytes: 1000, accepted: 3, failovers: 1, rtt: "17"), t: 0, time: Date())
        let later = recorder.samples(of: try reading(bytes: 3000, accepted: 4, failovers: 2, rtt: "null"), t: 2, time: Date())
        #expect(first.count == 1 && later.count == 1, "a link between two other peers was recorded: \(later)")
        let (start, sample) = (try #require(first.first?.objectValue), try #require(later.first?.objectValue))
        #expect(start["goodput_bps"] == .null && start["rtt_ms"]?.numberValue == 17)
        #expect(sample["peer"] == "p2" && sample["peer_name"] == "pump-2" && sample["transport"] == "bluetooth")
        #expect(sample["goodput_bps"]?.numberValue == 2000, "(2000 + 2000) bytes over 2 s: \(sample)")
        #expect(sample["throughput_bps"]?.numberValue == 108_800 && sample["rtt_ms"] == .null && sample["rssi_dbm"] == .null)
        #expect(sample["reconnects"] == 1 && sample["failovers"] == 1)
        let end = try #require(recorder.endLine(t: 2, time: Date(), unreachable: 0).objectValue)
        #expect(end["event"] == "end" && end["samples"] == 2 && end["peers_seen"] == 1)
        #expect(throws: CommandError.self) { try AgentReading(status: "<html>", metrics: "") }
    }

    @Test("the Prometheus parser reads the series asked for, labels and all, and skips the rest")
    func parsesPrometheusText() {
        let text = """
            # TYPE arcus_link_bytes_total counter
            arcus_link_bytes_total{transport="lan",direction="sent"} 1200
            arcus_link_bytes_total{direction="received", transport="lan"} 800 1700000000000
            arcus_sync_sessions 1
            weird{label="a \\"quoted\\" value"} 3
            arcus_failovers_total{transport="lan"} oops
            """
        let samples = PrometheusSamples(text: text, names: ["arcus_link_bytes_total", "weird", "arcus_failovers_total"])
        #expect(samples.value("arcus_link_bytes_total", ["transport": "lan", "direction": "sent"]) == 1200)
        #expect(samples.value("arcus_link_bytes_total", ["transport": "lan", "direction": "received"]) == 800)
        #expect(samples.value("weird", ["label": #"a "quoted" value"#]) == 3)
        #expect(samples.value("arcus_sync_sessions") == nil)
        #expect(samples.value("arcus_failovers_total", ["transport": "lan"]) == nil)
    }

    /// Polls `GET /v1/peers` every 100 ms, for up to 60 s, until a link has an `rtt_ms`.
    static func waitForRTT(of agent: RunningAgent) async throws -> Bool {
        for _ in 0..<600 {
            if case .object(let graph)? = try await agent.request(.GET, "/v1/peers").json, case .array(let links)? = graph["links"],
               links.contains(where: { $0.objectValue?["rtt_ms"]?.numberValue != nil }) {
                return true
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// Tools/field-report.py, run with python3 from the package's root.
    static func fieldReport(_ arguments: [String]) throws -> ArcusProcess.Outcome {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", root.appendingPathComponent("Tools/field-report.py").path] + arguments
        let (out, err) = (Pipe(), Pipe())
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return .init(status: process.terminationStatus, standardOutput: String(decoding: output, as: UTF8.self), standardError: String(decoding: errors, as: UTF8.self))
    }
}
