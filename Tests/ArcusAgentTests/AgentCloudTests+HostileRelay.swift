import ArcusCloud
import ArcusTestSupport
import Foundation
import Synchronization
import Testing

/// The relay's operator (or anyone who can publish on the mesh's subjects) against two agents
/// syncing through it. The intruder sees every subject and frame header in the clear; it speaks
/// the wire format from its documentation (Docs/Cloud.md), not through the transport's code.
extension AgentCloudTests {
    @Test("an intruder on the relay forges 'here' (new runs), 'leaving' and link frames, and replays what it saw: the agents' link stays up and every write arrives")
    func forgeriesOnTheRelayChangeNothing() async throws {
        let server = try NATSServerProcess.start(jetStream: true)
        let scratch = try MeshScratch("cloud-hostile")
        defer { scratch.remove() }
        let arguments = ["--config", scratch.config.path, "--transports", "cloud", "--cloud", server.url, "--subscribe", "SELECT * FROM cars"]
        let a = try await RunningAgent.launch(data: scratch.data("a"), arguments)
        defer { a.dismiss() }
        let b = try await RunningAgent.launch(data: scratch.data("b"), arguments)
        defer { b.dismiss() }

        try await insertHostileTestCar("before", into: a)
        let (met, seen) = try await b.wait(until: "SELECT * FROM cars", contains: "before")
        try #require(met, "the agents never synced through the relay: \(seen)\n\(a.log)\n\(b.log)")
        // Both have their link and their session now: from here on, a handshake would mean a
        // link was lost and made again.
        try await Task.sleep(for: .seconds(1))
        let handshakesBefore = (try await cloudHandshakes(a), try await cloudHandshakes(b))

        let intruder = try RelayIntruder(url: server.url, peers: [a.peer, b.peer])
        defer { intruder.close() }
        let attack = Task.detached { await intruder.attack(for: .seconds(12)) }
        var ids: [String] = []
        for index in 0..<30 {
            let id = String(format: "hostile-%03d", index)
            try await insertHostileTestCar(id, into: index.isMultiple(of: 2) ? a : b)
            ids.append(id)
            try await Task.sleep(for: .milliseconds(300))
        }
        await attack.value
        #expect(intruder.forgedCount > 500, "the intruder forged only \(intruder.forgedCount) messages")

        // Every write arrives (60 s: generous; through a local relay a write takes milliseconds).
        let missingAtA = try await a.waitForDocuments(ids, in: "cars")
        let missingAtB = try await b.waitForDocuments(ids, in: "cars")
        #expect(missingAtA.isEmpty && missingAtB.isEmpty, "lost under the forgeries: \(missingAtA) \(missingAtB)\n\(a.log.suffix(3_000))\n\(b.log.suffix(3_000))")
        // The link never went down: no new handshake on either side, and no restart believed.
        let handshakesAfter = (try await cloudHandshakes(a), try await cloudHandshakes(b))
        #expect(handshakesAfter == handshakesBefore, "handshakes before \(handshakesBefore), after \(handshakesAfter): a link was lost and made again")
        for agent in [a, b] {
            #expect(!agent.log.contains("peer restarted"), "\(agent.log.suffix(3_000))")
        }
        #expect(a.stop() == 0 && b.stop() == 0)
    }

    private func insertHostileTestCar(_ id: String, into agent: RunningAgent) async throws {
        let reply = try await agent.execute("INSERT INTO cars DOCUMENTS ({'_id': '\(id)', 'make': 'volvo'})")
        #expect(reply.status == 200, "\(reply.body)")
    }

    /// Cloud handshakes the agent has run, whatever their result.
    private func cloudHandshakes(_ agent: RunningAgent) async throws -> Int {
        let metrics = try await agent.request(.GET, "/metrics").body
        return metrics.split(separator: "\n")
            .filter { $0.hasPrefix(#"arcus_handshakes_total{transport="cloud""#) && !$0.contains(#"result="refused""#) }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            .reduce(0) { $0 + Int($1) }
    }
}

/// A NATS client that hears everything on the relay and answers each message with forgeries of
/// it: presence announcements with another run id, a later time or "leaving", old-format
/// unsigned ones for the same peers; for each link frame, a close, the next data frame, a large
/// credit, an open and an accept for the same link; and every message replayed.
final class RelayIntruder: Sendable {
    private let connection: NATSConnection
    private let state = Record()
    private let peers: [[UInt8]]

    /// What it heard and what it published (so that it does not answer its own forgeries,
    /// which the relay echoes).
    private final class Record: Sendable {
        private let state = Mutex((heard: [NATSMessage](), published: Set<[UInt8]>(), forged: 0))

        func heard(_ message: NATSMessage) {
            state.withLock { if !$0.published.contains(message.payload) { $0.heard.append(message) } }
        }
        func published(_ payload: [UInt8]) { state.withLock { $0.published.insert(payload); $0.forged += 1 } }
        var messages: [NATSMessage] { state.withLock { $0.heard } }
        var forged: Int { state.withLock { $0.forged } }
    }

    /// `peers`: the agents' ids in hex, as their ready lines give them.
    init(url: String, peers: [String]) throws {
        connection = try NATSConnection(NATSOptions(urls: [url]))
        self.peers = peers.map { hex in stride(from: 0, to: hex.count, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! } }
        let state = self.state
        _ = try connection.subscribe(">") { message in
            // Not JetStream's API traffic.
            guard message.subject.hasPrefix("arcus.") else { return }
            state.heard(message)
        }
        try connection.flush(within: .seconds(5))
    }

    var forgedCount: Int { state.forged }

    func attack(for duration: Duration) async {
        let end = ContinuousClock.now + duration
        var replayed = 0
        while ContinuousClock.now < end {
            let messages = state.messages
            for message in messages[replayed...] { answer(message) }
            // Recordings replayed, old and new.
            for message in messages.suffix(20) { publish(message.subject, message.payload) }
            replayed = messages.count
            if let presence = messages.last(where: { $0.subject.hasSuffix(".presence") })?.subject {
                for peer in peers {
                    for kind: UInt8 in [1, 2] {
                        publish(presence, Array("ARCUS-NATS1".utf8) + [kind] + peer + Self.randomBytes(8) + [0])
                    }
                }
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
        try? connection.flush(within: .seconds(5))
    }

    private func answer(_ message: NATSMessage) {
        let bytes = message.payload
        if message.subject.hasSuffix(".presence") {
            // Kind at 11 in both versions; the run id at 28 (version 1) or 76 (version 2), the
            // time at 84 (version 2).
            let instance = bytes.starts(with: Array("ARCUS-NATS1".utf8)) ? 28 : 76
            guard bytes.count >= instance + 8 else { return }
            var newRun = bytes
            for index in instance..<instance + 8 { newRun[index] = UInt8.random(in: 0...255) }
            var leaving = bytes
            leaving[11] = 2
            var later = bytes
            if later.count >= 92 { for index in 84..<92 { later[index] = 0xFF } }
            for forgery in [newRun, leaving, later] { publish(message.subject, forgery) }
        } else if message.subject.contains(".link."), bytes.count >= 15 {
            // Header: version, kind, flags, link id (3…10), value (11…14); version 2 ends with
            // a 16-byte tag, which only the peers can make: the intruder makes one up.
            let (version, flags) = (bytes[0], bytes[2])
            let id = Array(bytes[3..<11])
            let value = bytes[11..<15].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let tag = version >= 2 ? Self.randomBytes(16) : []
            let header = { (kind: UInt8, flags: UInt8, value: UInt32) in
                [version, kind, flags] + id + [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
            }
            let openBody = version >= 2 ? 80 : 16
            for forgery in [
                header(5, flags, 0),  // close
                header(3, flags, value &+ 1) + [6, 6, 6],  // the next data frame
                header(4, flags, 1 << 30),  // credit
                header(1, 1, 1 << 18) + Self.randomBytes(openBody),  // open
                header(2, 0, 1 << 18) + Self.randomBytes(8),  // accept
            ] {
                publish(message.subject, forgery + tag)
            }
        }
    }

    private func publish(_ subject: String, _ payload: [UInt8]) {
        state.published(payload)
        try? connection.publish(subject, payload)
    }

    private static func randomBytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255) } }

    func close() { connection.close() }
}
