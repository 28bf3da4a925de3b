import ArcusCRDT
import ArcusTestSupport
import Foundation
import Testing

/// An agent killed with SIGKILL comes back from its data directory and goes on where it stopped:
/// its peer sees a new life, ends the sync session with the old one and starts another, whose
/// hellos say what the restarted agent already holds. Runs in the "sync and the agent" pass (LAN
/// TCP with static peers, no daemon).
@Suite(.serialized)
struct AgentRestartTests {
    @Test("an agent killed with SIGKILL and restarted resumes sync where it stopped: what it receives after is a small fraction of the data set")
    func killedAndRestarted() async throws {
        let scratch = try MeshScratch("kill")
        defer { scratch.remove() }
        let port = try freePort()
        let lan = ["--config", scratch.config.path, "--transports", "lan", "--subscribe", "SELECT * FROM cars"]
        let source = try await RunningAgent.launch(data: scratch.data("source"), lan + ["--listen", "127.0.0.1:\(port)"])
        defer { source.dismiss() }
        let followerArguments = lan + ["--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(port)"]

        // 2,000 documents, in batches of 200, with random notes that the codec cannot compress away.
        for batch in 0..<10 {
            let documents = (0..<200).map { "({'_id': 'car-\(batch)-\($0)', 'make': 'volvo', 'note': '\(UUID().uuidString)'})" }
            let written = try await source.execute("INSERT INTO cars DOCUMENTS " + documents.joined(separator: ", "))
            #expect(written.status == 200, "\(written.body)")
        }
        var follower = try await RunningAgent.launch(data: scratch.data("follower"), followerArguments)
        #expect(try await Self.count(at: follower, reaches: 2000), "\(follower.log)")
        let before = try await Self.receivedBytes(follower)

        #expect(await follower.halt(signal: SIGKILL) == -SIGKILL)
        let written = try await source.execute("INSERT INTO cars DOCUMENTS ({'_id': 'after-the-kill', 'make': 'saab'})")
        #expect(written.status == 200, "\(written.body)")
        follower = try await RunningAgent.launch(data: scratch.data("follower"), followerArguments)
        defer { follower.dismiss() }
        #expect(try await Self.count(at: follower, reaches: 2001), "\(follower.log)\n--- source ---\n\(source.log)")
        let after = try await Self.receivedBytes(follower)
        print("killed and restarted: \(before) bytes received for 2,000 documents, \(after) after the restart")
        #expect(before > 30_000, "2,000 documents (random notes: 32 KB of entropy) took only \(before) bytes: the metric does not count what arrived")
        #expect(after > 0 && after * 10 < before, "after the restart the follower received \(after) bytes; the data set took \(before)")

        // Both directions go on: a write at the restarted agent reaches the source.
        let back = try await follower.execute("INSERT INTO cars DOCUMENTS ({'_id': 'from-the-restarted', 'make': 'saab'})")
        #expect(back.status == 200, "\(back.body)")
        let (arrived, seen) = try await source.wait(until: "SELECT * FROM cars WHERE _id = 'from-the-restarted'", contains: "from-the-restarted")
        #expect(arrived, "the restarted agent's write did not reach the source: \(seen)\n\(source.log)")
    }

    @Test("a static peer down when its dialler starts is reached once it comes up, and again after it is killed and restarted")
    func staticPeerRedialled() async throws {
        let scratch = try MeshScratch("redial")
        defer { scratch.remove() }
        let port = try freePort()
        let lan = ["--config", scratch.config.path, "--transports", "lan", "--subscribe", "SELECT * FROM cars"]
        let dialler = try await RunningAgent.launch(data: scratch.data("dialler"), lan + ["--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(port)"])
        defer { dialler.dismiss() }
        try await Task.sleep(for: .seconds(1))  // a dial or two fail first

        let listenerArguments = lan + ["--listen", "127.0.0.1:\(port)"]
        var listener = try await RunningAgent.launch(data: scratch.data("listener"), listenerArguments)
        #expect(try await dialler.execute("INSERT INTO cars DOCUMENTS ({'_id': 'before-the-kill', 'make': 'volvo'})").status == 200)
        var (arrived, seen) = try await listener.wait(until: "SELECT * FROM cars", contains: "before-the-kill")
        #expect(arrived, "the dialler never reached the listener that came up late: \(seen)\n\(dialler.log)")
        #expect(dialler.log.components(separatedBy: "could not dial").count - 1 == 1, "one line for a peer that cannot be reached:\n\(dialler.log)")

        // The listener cannot dial back (it has no --peer): the dialler must notice and dial again.
        #expect(await listener.halt(signal: SIGKILL) == -SIGKILL)
        listener = try await RunningAgent.launch(data: scratch.data("listener"), listenerArguments)
        defer { listener.dismiss() }
        #expect(try await dialler.execute("INSERT INTO cars DOCUMENTS ({'_id': 'after-the-kill', 'make': 'saab'})").status == 200)
        (arrived, seen) = try await listener.wait(until: "SELECT * FROM cars", contains: "after-the-kill")
        #expect(arrived, "the dialler did not dial the restarted listener again: \(seen)\n\(dialler.log)")
    }

    /// Waits until `agent` holds `count` cars.
    static func count(at agent: RunningAgent, reaches count: Int) async throws -> Bool {
        for _ in 0..<600 {
            if case .object(let reply)? = try? await agent.execute("SELECT * FROM cars").json, case .array(let items)? = reply["items"],
               items.count == count {
                return true
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// The bytes `agent` received over LAN links since it started, from its metrics.
    static func receivedBytes(_ agent: RunningAgent) async throws -> Int {
        let metrics = try await agent.request(.GET, "/metrics").body
        let prefix = #"arcus_link_bytes_total{transport="lan",direction="received"} "#
        guard let line = metrics.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }),
              let value = Double(line.dropFirst(prefix.count)) else { return -1 }
        return Int(value)
    }
}
