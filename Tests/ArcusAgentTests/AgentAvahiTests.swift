import ArcusCRDT
import Foundation
import Testing

/// Real `arcus agent` processes on 127.0.0.1 that know nothing of each other find each other
/// through the real avahi-daemon (confined to lo by Tools/start-avahi.sh), connect over LAN TCP
/// with the mesh handshake, and sync: a write through one agent's HTTP API reaches the others.
/// Runs in Tools/test.sh's avahi pass, which starts the daemon; under CI=true a missing daemon
/// fails it.
@Suite(.serialized, .enabled(if: AvahiDaemonState.runs || AvahiDaemonState.required, "no avahi-daemon (CI=true makes this a failure)"))
struct AgentAvahiTests {
    @Test("three agents find each other through avahi-daemon, and a write through one agent's API reaches the other two")
    func threeAgentsOverLAN() async throws {
        try #require(AvahiDaemonState.runs, "avahi-daemon is not running: start it confined to loopback with `Tools/start-avahi.sh start`")
        // A mesh of this run only, so that agents left by other runs are never dialled.
        let scratch = try MeshScratch("lan")
        defer { scratch.remove() }

        var agents: [RunningAgent] = []
        defer { for agent in agents { _ = agent.stop() } }
        for name in ["a", "b", "c"] {
            agents.append(try await RunningAgent.launch(data: scratch.data(name), [
                "--config", scratch.config.path, "--transports", "lan", "--listen", "127.0.0.1:0", "--subscribe", "SELECT * FROM cars",
            ]))
        }
        let written = try await agents[0].execute("INSERT INTO cars DOCUMENTS ({'_id': 'lan-1', 'make': 'toyota'})")
        #expect(written.status == 200, "\(written.body)")
        for agent in agents.dropFirst() {
            let (arrived, seen) = try await agent.wait(until: "SELECT * FROM cars", contains: "lan-1")
            #expect(arrived, "the write did not reach \(agent.url): \(seen)\n\(agent.log)")
        }
        for agent in agents { #expect(agent.stop() == 0, "\(agent.log)") }
        agents.removeAll()
    }
}

/// Whether avahi-daemon runs here (its socket exists), and whether these tests must run anyway.
enum AvahiDaemonState {
    static let runs = FileManager.default.fileExists(atPath: "/run/avahi-daemon/socket")
    static let required = ProcessInfo.processInfo.environment["CI"] == "true"
}
