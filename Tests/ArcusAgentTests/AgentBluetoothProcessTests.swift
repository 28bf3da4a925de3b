import ArcusBluetooth
import ArcusCRDT
import Foundation
import Testing

/// `arcus agent --transports ble` as people run it: two processes on the emulated radio sync; on
/// a machine whose kernel has no Bluetooth the agent says so once, with the fix, and goes on.
@Suite(.serialized)
struct AgentBluetoothProcessTests {
    @Test("two agent processes on one emulated radio directory find each other and sync")
    func emulatedRadioProcesses() async throws {
        let scratch = try MeshScratch("ble")
        defer { scratch.remove() }
        let radio = "/tmp/arcus-ble-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: radio) }
        let ble = ["--config", scratch.config.path, "--transports", "ble", "--ble-emulated", radio, "--subscribe", "SELECT * FROM cars"]
        let first = try await RunningAgent.launch(data: scratch.data("a"), ble)
        defer { first.dismiss() }
        let second = try await RunningAgent.launch(data: scratch.data("b"), ble)
        defer { second.dismiss() }
        #expect(try await first.execute("INSERT INTO cars DOCUMENTS ({'_id': 'over-the-air', 'make': 'volvo'})").status == 200)
        let (arrived, seen) = try await second.wait(until: "SELECT * FROM cars", contains: "over-the-air")
        #expect(arrived, "the write did not cross the emulated radio: \(seen)\n\(first.log)\n\(second.log)")
        let stopped = (await first.halt(), await second.halt())
        #expect(stopped.0 == 0 && stopped.1 == 0)
    }

    @Test("the radio's RSSI for each peer reaches GET /v1/status and arcus field-test's Bluetooth rows, and field-report.py plots it")
    func signalStrengthRecorded() async throws {
        let scratch = try MeshScratch("ble-rssi")
        defer { scratch.remove() }
        let radio = "/tmp/arcus-ble-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: radio) }
        let ble = ["--config", scratch.config.path, "--transports", "ble", "--ble-emulated", radio, "--subscribe", "SELECT * FROM cars"]
        let first = try await RunningAgent.launch(data: scratch.data("a"), ble + ["--name", "rssi-a"])
        defer { first.dismiss() }
        let second = try await RunningAgent.launch(data: scratch.data("b"), ble + ["--name", "rssi-b"])
        defer { second.dismiss() }
        // As a real adapter reports it with each advert: a hears b at −61 dBm, b hears a at −67.
        try EmulatedTopology(signal: [first.peer: [second.peer: -61], second.peer: [first.peer: -67]])
            .write(to: radio + "/topology.json")
        #expect(try await first.execute("INSERT INTO cars DOCUMENTS ({'_id': 'rssi-1', 'make': 'volvo'})").status == 200)
        let (arrived, seen) = try await second.wait(until: "SELECT * FROM cars", contains: "rssi-1")
        try #require(arrived, "the agents never linked: \(seen)\n\(first.log)\n\(second.log)")
        var status = ""
        for _ in 0..<100 {
            status = try await first.request(.GET, "/v1/status").body
            if status.contains("\"rssi_dbm\":-61") { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(status.contains("\"bluetooth_signal\":[{\"peer\":\"\(second.peer)\",\"rssi_dbm\":-61}]"), "\(status)")

        let log = scratch.directory.appendingPathComponent("a.jsonl")
        let run = try await ArcusProcess.run(["field-test", "--agent", first.url, "--seconds", "2", "--interval", "0.5", "--out", log.path])
        #expect(run.status == 0, "\(run.standardError)")
        let samples = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
            .compactMap { try Value(json: String($0)).objectValue }.filter { $0["event"] == nil }
        let bluetooth = samples.filter { $0["transport"] == "bluetooth" && $0["peer"]?.stringValue == second.peer }
        #expect(!bluetooth.isEmpty, "\(samples)")
        #expect(bluetooth.allSatisfy { $0["rssi_dbm"] == .int(-61) }, "\(bluetooth)")

        let html = scratch.directory.appendingPathComponent("report.html")
        let report = try FieldTestTests.fieldReport([log.path, "--out", html.path])
        #expect(report.status == 0, "\(report.standardError)")
        let page = try String(contentsOf: html, encoding: .utf8)
        #expect(page.contains("RSSI: rssi-a") && page.contains("-61 (-61 to -61)"), "\(page.prefix(3000))")
        let stopped = (await first.halt(), await second.halt())
        #expect(stopped.0 == 0 && stopped.1 == 0)
    }

    @Test("where the kernel has no Bluetooth, --transports ble,lan logs one line naming the cause and the fix, and the agent runs on LAN")
    func noBluetoothHere() async throws {
        let hasBluetooth = (try? SeqPacketSocket.l2cap()) != nil
        let scratch = try MeshScratch("noble")
        defer { scratch.remove() }
        let agent = try await RunningAgent.launch(data: scratch.data("a"), ["--config", scratch.config.path, "--transports", "ble,lan", "--listen", "127.0.0.1:0"])
        defer { agent.dismiss() }
        #expect(try await agent.execute("SELECT * FROM cars").status == 200, "the agent did not go on with its other transports")
        let lines = agent.log.split(separator: "\n").filter { $0.contains("transport=bluetooth") && $0.contains("did not start") }
        #expect(lines.count == 1, "\(agent.log)")
        if hasBluetooth {
            #expect(lines.first?.contains("--ble-emulated") == true, "\(agent.log)")
        } else {
            #expect(lines.first?.contains("EAFNOSUPPORT") == true && lines.first?.contains("modprobe bluetooth") == true, "\(agent.log)")
        }
        #expect(agent.log.contains("transport=lan") && agent.log.contains("transport started"))

        // Where a user looks: the ready line, /v1/status and `arcus status` name only the
        // transport that runs, and say why the other does not.
        let readyText = try String(contentsOf: agent.standardOutput, encoding: .utf8)
        guard case .object(let ready)? = try readyText.split(separator: "\n").first.map({ try Value(json: String($0)) }) else {
            Issue.record("no ready line: \(readyText)")
            return
        }
        #expect(ready["transports"] == .array(["lan"]), "\(readyText)")
        var failed: [String: Value] = [:]
        if case .object(let object)? = ready["transports_failed"] { failed = object }
        #expect(failed["ble"]?.stringValue?.contains(hasBluetooth ? "" : "EAFNOSUPPORT") == true, "\(readyText)")
        let status = try await agent.request(.GET, "/v1/status")
        #expect(status.body.contains("\"transports_failed\":{\"ble\":"), "\(status.body.prefix(400))")
        let table = try await ArcusProcess.run(["status", "--agent", agent.url])
        #expect(table.standardOutput.contains("transport ble") && table.standardOutput.contains("did not start"), "\(table.standardOutput)")
    }

    @Test("where the kernel has no Bluetooth, --transports ble alone exits 1 saying no transport could start, and why",
          .enabled(if: (try? SeqPacketSocket.l2cap()) == nil, "this kernel has Bluetooth: the transport may start"))
    func onlyTransportCannotStart() async throws {
        let scratch = try MeshScratch("onlyble")
        defer { scratch.remove() }
        let outcome = try await ArcusProcess.run(
            ["agent", "--data", scratch.data("a"), "--http", "127.0.0.1:0", "--config", scratch.config.path, "--transports", "ble"]
        )
        #expect(outcome.status == 1, "\(outcome.standardError)")
        #expect(outcome.standardError.contains("no transport could start") && outcome.standardError.contains("ble: this kernel has no Bluetooth"),
                "\(outcome.standardError)")
        #expect(!outcome.standardOutput.contains("\"ready\""), "\(outcome.standardOutput)")
    }
}
