import ArcusCRDT
import ArcusTestSupport
import Foundation
import Testing

/// LAN agents given each other as static peers sync whether or not avahi-daemon runs; without
/// it, each says so once, and goes on. Runs in the "sync and the agent" pass, before Tools/test.sh
/// starts any daemon.
@Suite(.serialized)
struct AgentStaticPeerTests {
    @Test("agents given --peer sync over LAN TCP; with no avahi-daemon each warns once, clearly, and goes on")
    func staticPeersWithoutDiscovery() async throws {
        let scratch = try MeshScratch("static")
        defer { scratch.remove() }

        let port = try freePort()
        let lan = ["--config", scratch.config.path, "--transports", "lan", "--subscribe", "SELECT * FROM cars"]
        let listener = try await RunningAgent.launch(data: scratch.data("b"), lan + ["--listen", "127.0.0.1:\(port)"])
        defer { listener.dismiss() }
        let dialler = try await RunningAgent.launch(
            data: scratch.data("a"), lan + ["--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(port)"]
        )
        defer { dialler.dismiss() }

        let written = try await dialler.execute("INSERT INTO cars DOCUMENTS ({'_id': 'static-1', 'make': 'volvo'})")
        #expect(written.status == 200, "\(written.body)")
        let (arrived, seen) = try await listener.wait(until: "SELECT * FROM cars", contains: "static-1")
        #expect(arrived, "the write did not reach the static peer: \(seen)\n\(dialler.log)\n\(listener.log)")

        if !FileManager.default.fileExists(atPath: "/run/avahi-daemon/socket") {
            for agent in [dialler, listener] {
                let warnings = agent.log.split(separator: "\n").filter { $0.contains("mDNS discovery") }
                #expect(warnings.count == 1, "\(agent.log)")
                #expect(warnings.first?.contains("--peer HOST:PORT") == true)
            }
        }
        let stopped = (await dialler.halt(), await listener.halt())
        #expect(stopped.0 == 0 && stopped.1 == 0)
    }
}
