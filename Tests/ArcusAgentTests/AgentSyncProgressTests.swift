import ArcusCRDT
import ArcusTestSupport
import Foundation
import Testing

/// The progress of a subscription's initial sync as a person sees it: `arcus subscribe --wait`
/// against a running agent whose peer holds many documents, and `GET /v1/subscriptions`.
@Suite(.serialized)
struct AgentSyncProgressTests {
    static let documents = 20_000

    @Test("arcus subscribe --wait shows the initial sync's progress and returns once the peer has sent everything; the API shows it per peer")
    func subscribeAndWait() async throws {
        let scratch = try MeshScratch("sync-progress")
        defer { scratch.remove() }
        let port = try freePort()
        let source = try await RunningAgent.launch(
            data: scratch.data("source"),
            ["--config", scratch.config.path, "--transports", "lan", "--name", "source", "--listen", "127.0.0.1:\(port)"])
        defer { source.dismiss() }
        for start in stride(from: 0, to: Self.documents, by: 2_000) {
            let rows = (start..<start + 2_000).map { "({'_id': 'car-\($0)', 'make': 'volvo', 'n': \($0)})" }.joined(separator: ", ")
            let written = try await source.execute("INSERT INTO cars DOCUMENTS \(rows)")
            try #require(written.status == 200, "\(written.body)")
        }
        let sink = try await RunningAgent.launch(
            data: scratch.data("sink"),
            ["--config", scratch.config.path, "--transports", "lan", "--name", "sink", "--listen", "127.0.0.1:0",
             "--peer", "127.0.0.1:\(port)"])
        defer { sink.dismiss() }

        let outcome = try await ArcusProcess.run(["subscribe", "--agent", sink.url, "SELECT * FROM cars", "--wait", "--timeout", "300"])
        #expect(outcome.status == 0, "\(outcome.standardError)\n\(sink.log)")
        let created = try Value(json: outcome.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(created.objectValue?["query"] == .string("SELECT * FROM cars"), "\(outcome.standardOutput)")
        let lines = outcome.standardError.split(separator: "\n").map(String.init)
        let last = try #require(lines.last)
        #expect(last.hasPrefix("#1: caught up with 1 peer: 20,000 documents,"), "\(outcome.standardError)")
        // Lines before it (a line a second while it waits) name the peer and what arrived.
        for line in lines.dropLast() {
            #expect(line.hasPrefix("#1 from source (") || line.hasPrefix("#1: waiting for a peer"), "\(line)")
        }
        let stored = try await sink.request(.GET, "/v1/status")
        #expect(stored.json?.objectValue?["store"]?.objectValue?["documents"] == .int(Int64(Self.documents)), "\(stored.body)")

        let reply = try await sink.request(.GET, "/v1/subscriptions")
        #expect(reply.status == 200)
        let subscription = try #require(reply.json?.objectValue?["subscriptions"].flatMap { if case .array(let all) = $0 { all.first } else { nil } })
        #expect(subscription.objectValue?["caught_up"] == .bool(true), "\(reply.body)")
        guard case .array(let peers)? = subscription.objectValue?["sync"], let peer = peers.first?.objectValue else {
            Issue.record("no sync progress in \(reply.body)")
            return
        }
        #expect(peers.count == 1)
        #expect(peer["caught_up"] == .bool(true))
        #expect(peer["documents_received"] == .int(Int64(Self.documents)), "\(reply.body)")
        #expect(peer["documents_to_go"] == .int(0), "\(reply.body)")
        #expect(peer["bytes_to_go"] == .int(0), "\(reply.body)")
        #expect(peer["fraction"] == .double(1), "\(reply.body)")
        if case .int(let bytes)? = peer["bytes_received"] { #expect(bytes > 10_000, "\(reply.body)") } else { Issue.record("no bytes_received: \(reply.body)") }
        #expect(peer["label"]?.stringValue?.hasPrefix("source (") == true, "\(reply.body)")
        // Named as /v1/peers and arcus peers name it, with its site (how sync logs name it) beside.
        #expect(peer["peer"] == .string(source.peer), "\(reply.body)")
        #expect(peer["site"] == .string(String(source.peer.prefix(16))), "\(reply.body)")

        // arcus status shows the same, in words.
        let status = try await ArcusProcess.run(["status", "--agent", sink.url])
        #expect(status.status == 0, "\(status.standardError)")
        #expect(status.standardOutput.contains("from source ("), "\(status.standardOutput)")
        #expect(status.standardOutput.contains("caught up: 20,000 documents,"), "\(status.standardOutput)")
    }

    @Test("arcus subscribe --wait with no peer gives up at its timeout, says the subscription stays, and exits 1")
    func waitTimesOut() async throws {
        let scratch = try MeshScratch("sync-progress-alone")
        defer { scratch.remove() }
        let alone = try await RunningAgent.launch(
            data: scratch.data("alone"), ["--config", scratch.config.path, "--transports", "lan", "--name", "alone", "--listen", "127.0.0.1:0"])
        defer { alone.dismiss() }
        let outcome = try await ArcusProcess.run(["subscribe", "--agent", alone.url, "SELECT * FROM cars", "--wait", "--timeout", "1"])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("#1: waiting for a peer to connect"), "\(outcome.standardError)")
        #expect(outcome.standardError.contains("is not caught up after 1.0 s"), "\(outcome.standardError)")
        #expect(outcome.standardError.contains("it stays registered"), "\(outcome.standardError)")
        let reply = try await alone.request(.GET, "/v1/subscriptions")
        #expect(reply.body.contains("SELECT * FROM cars"), "\(reply.body)")
        #expect(reply.body.contains("\"caught_up\":false"), "\(reply.body)")
    }
}
