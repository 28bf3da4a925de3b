import ArcusAgent
import ArcusBench
import ArcusCRDT
import ArcusTestSupport
import Testing

/// `arcus bench cloud`, small, against a nats-server of its own with JetStream: what it measures
/// happens (every document and every update crosses the relay between two agents, and the bench's
/// own connection sees the mesh's traffic), and what it prints is consistent. No timing is
/// asserted: that is the benchmark's job, not a test's.
@Suite(.serialized, .timeLimit(.minutes(4)))
struct CloudBenchTests {
    @Test("a fresh follower catches up through the relay, every timed update reaches it, and the relay's bytes are counted")
    func smallRun() async throws {
        let server = try NATSServerProcess.start(jetStream: true)
        defer { server.stop() }
        var options = CloudBench.Options(relayURL: server.url)
        options.documents = 300
        options.updates = 20
        let figures = try await CloudBench(options: options).run()
        #expect(figures.converged, "\(figures.jsonLine)")
        #expect(figures.documents == 300 && figures.updates == 20)
        #expect(figures.storeAndForward, "the relay has JetStream, so links should be read through it: \(figures.jsonLine)")
        // Each update crosses the relay as at least one link frame; the protocol lines cost more.
        #expect(figures.updateTraffic.messages >= 20 && figures.updateTraffic.payloadBytes > 0, "\(figures.jsonLine)")
        #expect(figures.updateTraffic.wireBytes > figures.updateTraffic.payloadBytes)
        #expect(figures.catchUp.payloadBytes > figures.updateTraffic.payloadBytes / 20, "\(figures.jsonLine)")
        // Idle, the peers still announce themselves.
        #expect(figures.idleTraffic.messages > 0, "\(figures.jsonLine)")
        #expect(figures.latencyP50 > 0 && figures.latencyP50 <= figures.latencyP99 && figures.latencyP99 <= figures.latencyMax)
        let line = try Value(json: figures.jsonLine)
        guard case .object(let fields) = line else { Issue.record("not a JSON object: \(figures.jsonLine)"); return }
        for key in [
            "catch_up_s", "docs_per_s", "update_p50_ms", "update_p99_ms", "update_max_ms", "relay_bytes_per_update",
            "relay_messages_per_update", "relay_idle_bytes_per_s", "store_and_forward", "transport",
        ] {
            #expect(fields[key] != nil, "\(key) missing from \(figures.jsonLine)")
        }
    }

    @Test("no relay at --cloud: a clear error that says how to start one")
    func noRelay() async throws {
        // A port nothing listens on: a server started and stopped again.
        let server = try NATSServerProcess.start(jetStream: false)
        let url = server.url
        server.stop()
        var options = CloudBench.Options(relayURL: url)
        options.documents = 10
        options.updates = 1
        let error = await #expect(throws: BenchError.self) { try await CloudBench(options: options).run() }
        #expect(error?.description.contains("nats-server -a 127.0.0.1 -p 4222 -js") == true, "\(String(describing: error))")
    }
}
