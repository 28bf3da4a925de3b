import ArcusBluetooth
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
        defer { _ = first.stop() }
        let second = try await RunningAgent.launch(data: scratch.data("b"), ble)
        defer { _ = second.stop() }
        #expect(try await first.execute("INSERT INTO cars DOCUMENTS ({'_id': 'over-the-air', 'make': 'volvo'})").status == 200)
        let (arrived, seen) = try await second.wait(until: "SELECT * FROM cars", contains: "over-the-air")
        #expect(arrived, "the write did not cross the emulated radio: \(seen)\n\(first.log)\n\(second.log)")
        #expect(first.stop() == 0 && second.stop() == 0)
    }

    @Test("where the kernel has no Bluetooth, --transports ble,lan logs one line naming the cause and the fix, and the agent runs on LAN")
    func noBluetoothHere() async throws {
        let hasBluetooth = (try? SeqPacketSocket.l2cap()) != nil
        let scratch = try MeshScratch("noble")
        defer { scratch.remove() }
        let agent = try await RunningAgent.launch(data: scratch.data("a"), ["--config", scratch.config.path, "--transports", "ble,lan", "--listen", "127.0.0.1:0"])
        defer { _ = agent.stop() }
        #expect(try await agent.execute("SELECT * FROM cars").status == 200, "the agent did not go on with its other transports")
        let lines = agent.log.split(separator: "\n").filter { $0.contains("transport=bluetooth") && $0.contains("did not start") }
        #expect(lines.count == 1, "\(agent.log)")
        if hasBluetooth {
            #expect(lines.first?.contains("--ble-emulated") == true, "\(agent.log)")
        } else {
            #expect(lines.first?.contains("EAFNOSUPPORT") == true && lines.first?.contains("modprobe bluetooth") == true, "\(agent.log)")
        }
        #expect(agent.log.contains("transport=lan") && agent.log.contains("transport started"))
    }
}
