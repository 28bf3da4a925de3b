import ArcusBench
import ArcusCloud
import ArcusTestSupport
import Foundation
import Synchronization
import Testing

/// Agents that share no LAN or Bluetooth link, meeting through a real nats-server on 127.0.0.1
/// with JetStream (each test starts its own, so that it can restart or cut it).
@Suite(.serialized, .timeLimit(.minutes(4)))
struct AgentCloudTests {
    @Test("two agents sync through nats-server, and a subscriber on > sees no plaintext of the documents")
    func syncThroughRelayCarriesOnlyCiphertext() async throws {
        let server = try NATSServerProcess.start(jetStream: true)
        let scratch = try MeshScratch("cloud-sync")
        defer { scratch.remove() }
        let recorder = try RelayRecorder(url: server.url)
        defer { recorder.close() }

        let a = try await RunningAgent.launch(data: scratch.data("a"), cloudArguments(scratch, relay: server.url))
        defer { a.dismiss() }
        let b = try await RunningAgent.launch(data: scratch.data("b"), cloudArguments(scratch, relay: server.url))
        defer { b.dismiss() }

        let secrets = ["vermilion-kestrel", "chassis_number_secret", "plaintext-id-77"]
        let written = try await a.execute("INSERT INTO cars DOCUMENTS ({'_id': 'plaintext-id-77', 'make': 'vermilion-kestrel', 'chassis_number_secret': 4711})")
        #expect(written.status == 200, "\(written.body)")
        let (arrived, seen) = try await b.wait(until: "SELECT * FROM cars", contains: "vermilion-kestrel")
        #expect(arrived, "the write did not cross the relay: \(seen)\n\(a.log)\n\(b.log)")
        let back = try await b.execute("INSERT INTO cars DOCUMENTS ({'_id': 'reply-1', 'make': 'saffron-heron'})")
        #expect(back.status == 200, "\(back.body)")
        let (returned, _) = try await a.wait(until: "SELECT * FROM cars", contains: "saffron-heron")
        #expect(returned, "the reply did not cross the relay\n\(b.log)")

        try await Task.sleep(for: .milliseconds(500))
        let relayed = recorder.messages
        let linkBytes = relayed.filter { $0.subject.contains(".link.") }.reduce(0) { $0 + $1.payload.count }
        #expect(linkBytes > 0, "the recorder saw no link traffic: \(relayed.count) messages")
        for secret in secrets + ["saffron-heron"] {
            let needle = Array(secret.utf8)
            let leaks = relayed.filter { $0.payload.contains(subsequence: needle) || $0.subject.contains(secret) }
            #expect(leaks.isEmpty, "\(secret) crossed the relay in the clear in \(leaks.count) messages")
        }
        #expect(a.stop() == 0 && b.stop() == 0)
    }

    @Test("nats-server restarts: the agents' links come back by themselves and no write is lost")
    func relayRestart() async throws {
        let server = try NATSServerProcess.start(jetStream: true)
        let scratch = try MeshScratch("cloud-restart")
        defer { scratch.remove() }
        let a = try await RunningAgent.launch(data: scratch.data("a"), cloudArguments(scratch, relay: server.url))
        defer { a.dismiss() }
        let b = try await RunningAgent.launch(data: scratch.data("b"), cloudArguments(scratch, relay: server.url))
        defer { b.dismiss() }

        let ids = (1...40).map { String(format: "restart-%03d", $0) }
        for id in ids.prefix(20) { try await insertCar(id, into: a) }
        let (before, _) = try await b.wait(until: "SELECT * FROM cars", contains: ids[19])
        #expect(before, "nothing crossed before the restart\n\(a.log)")

        try server.restart()
        for id in ids.suffix(20) { try await insertCar(id, into: a) }
        let missing = try await b.waitForDocuments(ids, in: "cars")
        #expect(missing.isEmpty, "lost across the relay's restart: \(missing)\n\(a.log)\n\(b.log)")
        #expect(a.stop() == 0 && b.stop() == 0)
    }

    @Test("a peer cut off from the relay gets every write when it returns, from the stream, though the writer has left")
    func storedFramesWaitForAPeerAway() async throws {
        let server = try NATSServerProcess.start(jetStream: true)
        let uplink = try TCPCutProxy(targetPort: server.port)
        defer { uplink.stop() }
        let scratch = try MeshScratch("cloud-away")
        defer { scratch.remove() }
        let writer = try await RunningAgent.launch(data: scratch.data("writer"), cloudArguments(scratch, relay: server.url))
        defer { writer.dismiss() }
        let away = try await RunningAgent.launch(data: scratch.data("away"), cloudArguments(scratch, relay: uplink.url))
        defer { away.dismiss() }

        try await insertCar("away-000", into: writer)
        let (met, _) = try await away.wait(until: "SELECT * FROM cars", contains: "away-000")
        #expect(met, "the two never synced\n\(writer.log)\n\(away.log)")

        let sentBefore = try await writer.metricValue("arcus_sync_documents_sent_total") ?? 0
        uplink.cut()
        let ids = (1...30).map { String(format: "away-%03d", $0) }
        for id in ids { try await insertCar(id, into: writer) }
        // The writer leaves once its sync session has sent the thirty documents (a clean stop
        // flushes the relay connection). Neither a fixed second nor three seconds without a new
        // frame was enough among the phase's tests at once: a writer starved of CPU still had the
        // last six writes unsent, and so never stored for the peer away.
        let sent = try await writer.metric("arcus_sync_documents_sent_total", reaches: sentBefore + Double(ids.count))
        #expect(sent, "the writer never sent the \(ids.count) documents\n\(writer.log)")
        #expect(await writer.halt() == 0, "the writer did not stop cleanly\n\(writer.log)")
        let (early, _) = try await away.wait(until: "SELECT * FROM cars WHERE _id = 'away-001'", contains: "away-001", attempts: 5)
        #expect(!early, "a write reached the peer while it was cut off: the cut did not hold")

        uplink.restore()
        let missing = try await away.waitForDocuments(ids, in: "cars")
        #expect(missing.isEmpty, "writes made while the peer was away never reached it: \(missing)\n\(away.log)\nThe writer's log:\n\(writer.log)")
        #expect(await away.halt() == 0)
    }

    @Test("a hub keeps what a writer wrote, and a device that never met the writer gets it from the hub")
    func hubBridgesPeersThatNeverMeet() async throws {
        let server = try NATSServerProcess.start(jetStream: true)
        let scratch = try MeshScratch("cloud-hub")
        defer { scratch.remove() }
        let hub = try await RunningAgent.launch(data: scratch.data("hub"), cloudArguments(scratch, relay: server.url, subscribe: nil) + ["--role", "hub"])
        defer { hub.dismiss() }
        let writer = try await RunningAgent.launch(data: scratch.data("writer"), cloudArguments(scratch, relay: server.url, subscribe: nil))
        defer { writer.dismiss() }

        let ids = (1...10).map { String(format: "hub-%03d", $0) }
        for id in ids { try await insertCar(id, into: writer) }
        let kept = try await hub.waitForDocuments(ids, in: "cars")
        #expect(kept.isEmpty, "the hub did not take everything: \(kept)\n\(hub.log)")
        #expect(await writer.halt() == 0)

        let late = try await RunningAgent.launch(data: scratch.data("late"), cloudArguments(scratch, relay: server.url))
        defer { late.dismiss() }
        let missing = try await late.waitForDocuments(ids, in: "cars")
        #expect(missing.isEmpty, "the late device did not get the writer's documents through the hub: \(missing)\n\(late.log)")
        #expect(hub.stop() == 0 && late.stop() == 0)
    }

    @Test("a relay that wants a password: with it in the URL agents sync; with a wrong one the log says what to check")
    func relayCredentials() async throws {
        let server = try NATSServerProcess.start(jetStream: true, extraArguments: ["--user", "arcus", "--pass", "s3cret"])
        let scratch = try MeshScratch("cloud-auth")
        defer { scratch.remove() }
        let good = "nats://arcus:s3cret@127.0.0.1:\(server.port)"
        let a = try await RunningAgent.launch(data: scratch.data("a"), cloudArguments(scratch, relay: good))
        defer { a.dismiss() }
        let b = try await RunningAgent.launch(data: scratch.data("b"), cloudArguments(scratch, relay: good))
        defer { b.dismiss() }
        try await insertCar("auth-1", into: a)
        let (arrived, _) = try await b.wait(until: "SELECT * FROM cars", contains: "auth-1")
        #expect(arrived, "no sync through a relay with a password\n\(a.log)")

        let refused = try await RunningAgent.launch(
            data: scratch.data("c"), cloudArguments(scratch, relay: "nats://arcus:wrong@127.0.0.1:\(server.port)")
        )
        defer { refused.dismiss() }
        var warned = false
        for _ in 0..<300 where !warned {
            warned = refused.log.contains("cloud relay: not connected to nats://127.0.0.1:\(server.port)")
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(warned, "\(refused.log)")
        #expect(refused.log.contains("user and password"))
        #expect(!refused.log.contains("wrong"), "the password was written to the log")
        #expect(a.stop() == 0 && b.stop() == 0 && refused.stop() == 0)
    }

    private func cloudArguments(_ scratch: MeshScratch, relay: String, subscribe: String? = "SELECT * FROM cars") -> [String] {
        ["--config", scratch.config.path, "--transports", "cloud", "--cloud", relay] + (subscribe.map { ["--subscribe", $0] } ?? [])
    }

    private func insertCar(_ id: String, into agent: RunningAgent) async throws {
        let reply = try await agent.execute("INSERT INTO cars DOCUMENTS ({'_id': '\(id)', 'make': 'volvo'})")
        #expect(reply.status == 200, "\(reply.body)")
    }
}

extension RunningAgent {
    /// Waits (up to 60 s) until every id in `ids` is in `collection`; the ids still missing then.
    func waitForDocuments(_ ids: [String], in collection: String) async throws -> [String] {
        var missing = ids
        for _ in 0..<600 {
            let body = (try? await execute("SELECT * FROM \(collection)").body) ?? ""
            missing = ids.filter { !body.contains("\"\($0)\"") }
            if missing.isEmpty { return [] }
            try await Task.sleep(for: .milliseconds(100))
        }
        return missing
    }

    /// The `/metrics` series' value now, or nil when it is missing.
    func metricValue(_ series: String) async throws -> Double? {
        PrometheusSamples(text: try await request(.GET, "/metrics").body, names: [series]).value(series)
    }

    /// Whether the `/metrics` series reaches `target` within a minute.
    func metric(_ series: String, reaches target: Double) async throws -> Bool {
        for _ in 0..<600 {
            if let value = try? await metricValue(series), value >= target { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// `wait(until:contains:)` with fewer tries, for checking that something has not happened.
    func wait(until statement: String, contains text: String, attempts: Int) async throws -> (found: Bool, reply: String) {
        var reply = ""
        for _ in 0..<attempts {
            reply = (try? await execute(statement).body) ?? ""
            if reply.contains(text) { return (true, reply) }
            try await Task.sleep(for: .milliseconds(100))
        }
        return (false, reply)
    }
}

/// Everything a subscriber on `>` receives: what anyone watching the relay could read.
final class RelayRecorder: Sendable {
    private let connection: NATSConnection
    private let recorded = Mutex<[NATSMessage]>([])

    init(url: String) throws {
        connection = try NATSConnection(NATSOptions(urls: [url]))
        _ = try connection.subscribe(">") { [weak self] message in self?.record(message) }
        try connection.flush(within: .seconds(5))
    }

    private func record(_ message: NATSMessage) { recorded.withLock { $0.append(message) } }

    var messages: [NATSMessage] { recorded.withLock { $0 } }

    func close() { connection.close() }
}

extension Array where Element == UInt8 {
    func contains(subsequence needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { start in self[start..<start + needle.count].elementsEqual(needle) }
    }
}
