import ArcusCRDT
import Foundation
import Testing

/// `arcus agent --transports ble` on the Linux kernel's Bluetooth stack, as a user runs it: each
/// agent a process bound to its own controller (`--ble-adapter`), advertising and discovering
/// through the management socket, linking over L2CAP LE credit-based channels. The controllers
/// are the virtual ones Tools/test-bluetooth.sh makes in a VM, named by
/// `ARCUS_BT_ADAPTERS=ADDR,ADDR[,ADDR]` and `ARCUS_BT_INDICES=N,N[,N]`; the guest runs this suite
/// without bluetoothd and again with it owning the controllers (`ARCUS_BT_BLUETOOTHD=1`).
@Suite("Agents on the kernel's Bluetooth stack", .serialized, .timeLimit(.minutes(10)),
       .enabled(if: KernelControllers.named != nil, "needs ARCUS_BT_ADAPTERS and ARCUS_BT_INDICES: run Tools/test-bluetooth.sh"))
struct KernelBluetoothAgentTests {
    static var controllers: [KernelControllers.Controller] { KernelControllers.named ?? [] }
    /// How many documents the bulk catch-up moves (ARCUS_BT_BULK; 10,000 by default).
    static var bulk: Int { ProcessInfo.processInfo.environment["ARCUS_BT_BULK"].flatMap(Int.init) ?? 10_000 }
    static var context: String { ProcessInfo.processInfo.environment["ARCUS_BT_BLUETOOTHD"] == "1" ? "with bluetoothd" : "without bluetoothd" }

    func launch(_ scratch: MeshScratch, _ name: String, on controller: KernelControllers.Controller, _ extra: [String] = []) async throws -> RunningAgent {
        try await RunningAgent.launch(data: scratch.data(name), [
            "--config", scratch.config.path, "--transports", "ble", "--ble-adapter", controller.address,
            "--subscribe", "SELECT * FROM cars", "--subscribe", "SELECT * FROM bulk", "--log-level", "debug",
        ] + extra)
    }

    @Test("two agents, each on its own controller, find each other and sync a write; then a bulk catches up")
    func twoAgents() async throws {
        let scratch = try MeshScratch("kernel-ble")
        defer { scratch.remove() }
        let first = try await launch(scratch, "a", on: Self.controllers[0])
        defer { first.stop() }
        #expect(try await first.execute("INSERT INTO cars DOCUMENTS ({'_id': 'over-the-air', 'make': 'volvo'})").status == 200)
        let started = Date()
        let second = try await launch(scratch, "b", on: Self.controllers[1])
        defer { second.stop() }
        #expect(second.printed.contains(#""transports":["ble"]"#), "the ready line: \(second.printed)")
        let (arrived, seen) = try await second.wait(until: "SELECT * FROM cars", contains: "over-the-air")
        let firstSync = Date().timeIntervalSince(started)
        #expect(arrived, "the write did not cross the radio: \(seen)\n\(first.log)\n\(second.log)")
        guard arrived else { return }

        // The bulk: written in statements of 500 documents on the first agent, timed until the
        // second holds every one.
        let bulkStarted = Date()
        for batch in stride(from: 0, to: Self.bulk, by: 500) {
            let documents = (batch..<min(batch + 500, Self.bulk)).map { "({'_id': 'doc-\($0)', 'n': \($0), 'site': 'a'})" }
            #expect(try await first.execute("INSERT INTO bulk DOCUMENTS " + documents.joined(separator: ", ")).status == 200)
        }
        var count = 0
        let deadline = Date().addingTimeInterval(400)
        while count < Self.bulk && Date() < deadline {
            try await Task.sleep(for: .seconds(1))
            if case .object(let reply)? = try? await second.execute("SELECT _id FROM bulk").json, case .array(let items)? = reply["items"] {
                count = items.count
            }
        }
        let bulkSeconds = Date().timeIntervalSince(bulkStarted)
        #expect(count == Self.bulk, "\(count) of \(Self.bulk) documents caught up in \(Int(bulkSeconds)) s\n\(second.log.suffix(3000))")
        print(String(format: "kernel-ble (%@): discovery to first sync %.2f s; bulk of %d documents caught up in %.1f s", Self.context, firstSync, Self.bulk, bulkSeconds))
        #expect(first.stop() == 0 && second.stop() == 0)
    }

    @Test("a foreign L2CAP client (BlueZ's l2test) on an agent's PSM is refused; the agent stays up and goes on syncing")
    func foreignClientRefused() async throws {
        let scratch = try MeshScratch("kernel-ble-foreign")
        defer { scratch.remove() }
        let first = try await launch(scratch, "a", on: Self.controllers[0], ["--ble-psm", "144"])
        defer { first.stop() }
        let second = try await launch(scratch, "b", on: Self.controllers[1])
        defer { second.stop() }
        // l2test from the second controller: connects to PSM 144 (0x90) and sends its own data.
        let (_, said) = try await KernelControllers.run(
            "/usr/bin/l2test", ["-s", "-V", "le_public", "-P", "144", "-b", "64", "-N", "5", "-i", Self.controllers[1].address, Self.controllers[0].address]
        )
        print("kernel-ble (\(Self.context)): l2test said: \(said.split(separator: "\n").suffix(4).joined(separator: " | "))")
        #expect(said.contains("Connected"), "l2test never reached the agent's PSM: \(said)")
        #expect(first.process.isRunning, "the agent died of a foreign peer:\n\(first.log.suffix(3000))")
        #expect(try await first.execute("INSERT INTO cars DOCUMENTS ({'_id': 'after-the-stranger', 'make': 'volvo'})").status == 200)
        let (arrived, seen) = try await second.wait(until: "SELECT * FROM cars", contains: "after-the-stranger")
        #expect(arrived, "sync stopped after the foreign client: \(seen)\n\(first.log.suffix(3000))")
        if !arrived || !said.contains("Connected") { KernelControllers.keep([first.log, second.log], as: "foreign-\(Self.context)") }
        #expect(first.stop() == 0)
    }

    @Test("a controller powered off mid-run: the agent says so, and links and syncs again when it is powered on")
    func controllerPowerCycle() async throws {
        let scratch = try MeshScratch("kernel-ble-power")
        defer { scratch.remove() }
        let first = try await launch(scratch, "a", on: Self.controllers[0])
        defer { first.stop() }
        let second = try await launch(scratch, "b", on: Self.controllers[1])
        defer { second.stop() }
        #expect(try await first.execute("INSERT INTO cars DOCUMENTS ({'_id': 'before', 'make': 'volvo'})").status == 200)
        #expect(try await second.wait(until: "SELECT * FROM cars", contains: "before").found, "no first sync:\n\(second.log.suffix(3000))")

        let index = Self.controllers[1].index
        #expect(try await KernelControllers.btmgmt(index, "power", "off"))
        #expect(try await first.execute("INSERT INTO cars DOCUMENTS ({'_id': 'while-off', 'make': 'saab'})").status == 200)
        try await Task.sleep(for: .seconds(3))
        #expect(second.log.contains("was powered off"), "the agent did not say its controller went off:\n\(second.log.suffix(3000))")
        #expect(try await KernelControllers.btmgmt(index, "power", "on"))
        let (arrived, seen) = try await second.wait(until: "SELECT * FROM cars", contains: "while-off")
        #expect(arrived, "no sync after the controller came back: \(seen)\n\(second.log.suffix(4000))")
        if !arrived { KernelControllers.keep([first.log, second.log], as: "power-\(Self.context)") }
        #expect(second.log.contains("powered on again"), "\(second.log.suffix(3000))")
    }

    @Test("bluetoothd restarted mid-run (it powers the controllers off, on, and clears every advert): the agents say so and link and sync again",
          .enabled(if: ProcessInfo.processInfo.environment["ARCUS_BT_BLUETOOTHD"] == "1", "bluetoothd runs only in the VM pass's second half"))
    func bluetoothdRestarted() async throws {
        let scratch = try MeshScratch("kernel-ble-bluetoothd")
        defer { scratch.remove() }
        let first = try await launch(scratch, "a", on: Self.controllers[0])
        defer { first.stop() }
        let second = try await launch(scratch, "b", on: Self.controllers[1])
        defer { second.stop() }
        #expect(try await first.execute("INSERT INTO cars DOCUMENTS ({'_id': 'before-restart', 'make': 'volvo'})").status == 200)
        #expect(try await second.wait(until: "SELECT * FROM cars", contains: "before-restart").found, "no first sync:\n\(second.log.suffix(3000))")

        let restarted = try await KernelControllers.restartBluetoothd(controllers: Self.controllers.count)
        #expect(restarted, "bluetoothd did not come back with every controller")
        #expect(try await first.execute("INSERT INTO cars DOCUMENTS ({'_id': 'after-restart', 'make': 'saab'})").status == 200)
        let (arrived, seen) = try await second.wait(until: "SELECT * FROM cars", contains: "after-restart")
        #expect(arrived, "no sync after bluetoothd restarted: \(seen)\n\(first.log.suffix(3000))\n\(second.log.suffix(3000))")
        if !arrived { KernelControllers.keep([first.log, second.log], as: "bluetoothd-restart") }
        #expect(first.process.isRunning && second.process.isRunning)
        // bluetoothd powers its controllers off when it stops, and clears every advert when it starts.
        #expect(second.log.contains("was powered off"), "\(second.log.suffix(3000))")
        #expect(first.log.contains("removed this peer's advert") || second.log.contains("removed this peer's advert"), "\(first.log.suffix(3000))")
    }

    // Last: the emulator's misrouted links (below) can leave its controllers in a state the next test would meet.
    @Test("three agents, each on its own controller: a write on each reaches the other two", .enabled(if: KernelControllers.named?.count ?? 0 >= 3))
    func threeAgents() async throws {
        let scratch = try MeshScratch("kernel-ble3")
        defer { scratch.remove() }
        var agents: [RunningAgent] = []
        defer { for agent in agents { agent.stop() } }
        for (index, controller) in Self.controllers.prefix(3).enumerated() {
            agents.append(try await launch(scratch, "agent-\(index)", on: controller))
        }
        for (index, agent) in agents.enumerated() {
            #expect(try await agent.execute("INSERT INTO cars DOCUMENTS ({'_id': 'from-\(index)', 'make': 'saab'})").status == 200)
        }
        // Every agent holds all three writes, within 90 s in all.
        let deadline = Date().addingTimeInterval(90)
        var missing: [String] = []
        repeat {
            missing = []
            for (index, agent) in agents.enumerated() {
                let seen = (try? await agent.execute("SELECT * FROM cars").body) ?? ""
                for other in agents.indices where other != index && !seen.contains("from-\(other)") { missing.append("agent \(index) lacks agent \(other)'s write") }
            }
            if !missing.isEmpty { try await Task.sleep(for: .seconds(1)) }
        } while !missing.isEmpty && Date() < deadline
        if !missing.isEmpty { KernelControllers.keep(agents.map(\.log), as: "three-agents-\(Self.context)") }
        // BlueZ's emulator up to 5.82 forwards ACL data under the sender's connection handle and
        // reports the central's handle to the peripheral (fixed upstream by 4ff7deaf8c, "emulator:
        // use the handle of the receiving side"). Both ends count from 42, so the error shows only
        // once a controller holds two links, as here: btmon shows the answer to a channel request
        // sent and never received. Passes when the handles happen to agree.
        withKnownIssue("btvirt 5.66 misroutes ACL data once a controller holds two links", isIntermittent: true) {
            #expect(missing.isEmpty, "\(missing)")
        }
    }
}

/// The controllers the VM pass names: `ARCUS_BT_ADAPTERS` (addresses) and `ARCUS_BT_INDICES`
/// (their hciN numbers), in the same order; nil unless at least two are named.
enum KernelControllers {
    struct Controller: Sendable {
        var address: String
        var index: Int
    }

    static var named: [Controller]? {
        let environment = ProcessInfo.processInfo.environment
        guard let addresses = environment["ARCUS_BT_ADAPTERS"]?.split(separator: ","),
              let indices = environment["ARCUS_BT_INDICES"]?.split(separator: ",").compactMap({ Int($0) }),
              addresses.count >= 2, addresses.count == indices.count else { return nil }
        return zip(addresses, indices).map { Controller(address: String($0), index: $1) }
    }

    /// Writes the agents' logs to ARCUS_BT_LOGS/LABEL-N.log, where the VM pass keeps them.
    static func keep(_ logs: [String], as label: String) {
        guard let directory = ProcessInfo.processInfo.environment["ARCUS_BT_LOGS"] else { return }
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (index, log) in logs.enumerated() { try? log.write(toFile: "\(directory)/\(label)-\(index).log", atomically: true, encoding: .utf8) }
    }

    /// Stops bluetoothd (SIGTERM, as systemd does) and starts it again (`-n`, in the background,
    /// its log beside the agents'); whether it lists `controllers` controllers within 30 s.
    static func restartBluetoothd(controllers: Int) async throws -> Bool {
        _ = try await run("/usr/bin/pkill", ["-TERM", "-x", "bluetoothd"])
        for _ in 0..<100 {
            guard try await run("/usr/bin/pgrep", ["-x", "bluetoothd"]).status == 0 else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/libexec/bluetooth/bluetoothd")
        daemon.arguments = ["-n"]
        let log = (ProcessInfo.processInfo.environment["ARCUS_BT_LOGS"] ?? NSTemporaryDirectory()) + "/bluetoothd-restarted.log"
        try? FileManager.default.createDirectory(atPath: (log as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: log, contents: nil)
        daemon.standardOutput = FileHandle(forWritingAtPath: log)
        daemon.standardError = daemon.standardOutput
        try daemon.run()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let listed = try await run("/usr/bin/bluetoothctl", ["list"]).output
            if listed.split(separator: "\n").filter({ $0.contains("Controller ") }).count == controllers { return true }
            try await Task.sleep(for: .milliseconds(500))
        }
        return false
    }

    /// Runs `btmgmt --index INDEX ARGS…`; whether it exited 0.
    static func btmgmt(_ index: Int, _ arguments: String...) async throws -> Bool {
        try await run("/usr/bin/btmgmt", ["--index", "\(index)"] + arguments).status == 0
    }

    /// Runs a BlueZ tool for up to 60 s (then terminates it); its exit status and what it printed.
    static func run(_ executable: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(100)) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
    }
}
