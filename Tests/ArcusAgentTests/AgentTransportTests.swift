import ArcusAgent
import ArcusCRDT
import ArcusLoopback
import ArcusMesh
import ArcusTestSupport
import AsyncHTTPClient
import Foundation
import Logging
import Prometheus
import ServiceLifecycle
import Testing

/// Two `Agent`s in this process whose transports share one loopback network: what the agent does
/// with a transport's links (handshake, multiplexer, sync, presence, metrics) is what the LAN
/// transport will get.
@Suite("Agent: links from its transports")
struct AgentTransportTests {
    final class Member: Sendable {
        let agent: Agent
        let registry = PrometheusCollectorRegistry()
        let directory: String

        convenience init(_ name: String, network: LoopbackNetwork, secretFile: String, subscribe: [String] = []) throws {
            try self.init(name, networks: [network], secretFile: secretFile, subscribe: subscribe)
        }

        init(_ name: String, networks: [LoopbackNetwork], secretFile: String, subscribe: [String] = []) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-agent-\(name)-\(UUID().uuidString)").path
            let configuration = AgentConfiguration(dataDirectory: directory, name: name, subscriptions: subscribe, meshSecretFile: secretFile)
            var logger = Logger(label: "test.\(name)")
            logger.logLevel = .critical
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            // The agent's own identity, made first so that its transport can advertise its peer id.
            let identity = try PeerIdentity.load(orCreateAt: URL(fileURLWithPath: directory).appendingPathComponent("identity"))
            agent = try Agent(
                configuration: configuration, metricsFactory: PrometheusMetricsFactory(registry: registry), logger: logger,
                transports: networks.map { LoopbackTransport(name: name, peer: identity.peerID, on: $0) }
            )
        }

        func ids(_ collection: String) throws -> [String] {
            try agent.store.execute("SELECT * FROM \(collection) ORDER BY _id").items.compactMap {
                if case .object(let document) = $0 { document["_id"]?.stringValue } else { nil }
            }
        }

        var metrics: String { registry.emitToString() }
    }

    /// What `member`'s session with `other` holds now, for a failure's message.
    static func sessionState(_ member: Member, with other: Member) async -> String {
        let session = await member.agent.multiplexer.session(with: other.agent.identity.peerID)
        let links = await session.linkStatuses, active = await session.activeLink, waiting = await session.unacknowledgedMessages
        return "links \(links), active \(String(describing: active)), unacknowledged \(waiting.count) (\(waiting.bytes) B); \(await session.diagnosis)"
    }

    static func secretFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-secret-\(UUID().uuidString)").path
        #expect(try SecretFile.create(MeshSecret.random().bytes, at: path))
        return path
    }

    /// The value of one series in Prometheus text.
    static func value(of series: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.dropFirst(series.count + 1)) }
    }

    @Test("two agents on one network handshake, bind a session, sync a subscription and see each other")
    func twoAgentsSync() async throws {
        let network = LoopbackNetwork()
        let secret = try Self.secretFile()
        let reader = try Member("reader", network: network, secretFile: secret, subscribe: ["SELECT * FROM cars"])
        let writer = try Member("writer", network: network, secretFile: secret)
        defer { for path in [secret, reader.directory, writer.directory] { try? FileManager.default.removeItem(atPath: path) } }
        _ = try writer.agent.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'a'}), ({'_id': 'b'})")
        _ = try writer.agent.store.execute("INSERT INTO trucks DOCUMENTS ({'_id': 't'})")

        let quiet = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        let (addresses, address) = AsyncStream.makeStream(of: String.self)
        let api = AgentHTTPAPI.application(for: reader.agent, registry: reader.registry, logger: quiet) { address.yield($0) }
        let group = ServiceGroup(services: [api, reader.agent, writer.agent], logger: quiet)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            if !(await eventually { (try? reader.ids("cars")) == ["a", "b"] }) {
                // Where each side's session stood: which links, which carries traffic, what waits in its window.
                Issue.record("the reader never received the cars; reader: \(await Self.sessionState(reader, with: writer)); writer: \(await Self.sessionState(writer, with: reader))")
            }
            #expect(try reader.ids("trucks").isEmpty, "the reader received what it did not subscribe to")
            #expect(await eventually { reader.agent.presence.graph.peers.keys.contains(writer.agent.identity.peerID) })
            let metrics = reader.metrics
            #expect(metrics.contains(#"arcus_handshakes_total{transport="loopback",result="accepted"} 1"#), "\(metrics)")
            #expect(metrics.contains(#"arcus_links{transport="loopback"} 1"#), "\(metrics)")
            for direction in ["sent", "received"] {
                let bytes = Self.value(of: #"arcus_link_bytes_total{transport="loopback",direction=""# + direction + #""}"#, in: metrics)
                #expect((bytes ?? 0) > 0, "\(direction): \(metrics)")
            }

            // The presence graph through the API and `arcus peers`: the writer, one hop away, over loopback.
            var iterator = addresses.makeAsyncIterator()
            let url = try #require(await iterator.next())
            let (readerID, writerID) = (reader.agent.identity.peerID.description, writer.agent.identity.peerID.description)
            #expect(await eventually {
                let graph = reader.agent.presence.graph
                return graph.peers[writer.agent.identity.peerID]?.name == "writer" && !graph.links.isEmpty
            }, "the reader's presence graph never held the writer and its link")
            // GET /metrics brings the sync engine's figures up to date: the reader received the cars.
            var scrape = HTTPClientRequest(url: url + "/metrics")
            scrape.method = .GET
            scrape.headers.add(name: "Authorization", value: "Bearer " + reader.agent.apiToken.hex)
            let scraped = String(buffer: try await HTTPClient.shared.execute(scrape, timeout: .seconds(60)).body.collect(upTo: 1 << 20))
            #expect((Self.value(of: "arcus_sync_bytes_received_total", in: scraped) ?? 0) > 0, "\(scraped)")
            #expect(Self.value(of: "arcus_sync_sessions", in: scraped) == 1, "\(scraped)")
            let table = try await ArcusProcess.run(["peers", "--agent", url]).standardOutput
            #expect(table.contains(writerID) && table.contains("writer") && table.contains("loopback"), "\(table)")
            let json = try await ArcusProcess.run(["peers", "--agent", url, "--json"])
            guard case .object(let graph)? = try? Value(json: json.standardOutput),
                  case .array(let peers)? = graph["peers"], case .array(let links)? = graph["links"] else {
                Issue.record("peers --json printed \(json.standardOutput) \(json.standardError)")
                await group.triggerGracefulShutdown()
                return
            }
            #expect(peers.contains(["id": .string(writerID), "name": "writer", "self": false, "metadata": [:], "hops": 1, "next_hop": .string(writerID)]), "\(peers)")
            let ends = Set([readerID, writerID])
            #expect(links.contains { link in
                guard case .object(let fields) = link, case .string(let a)? = fields["a"], case .string(let b)? = fields["b"] else { return false }
                return Set([a, b]) == ends && fields["transport"] == "loopback"
            }, "\(links)")
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    @Test("without a mesh credential in common, links are refused and counted, and nothing syncs")
    func strangersAreRefused() async throws {
        let network = LoopbackNetwork()
        let (secretA, secretB) = (try Self.secretFile(), try Self.secretFile())
        let a = try Member("a", network: network, secretFile: secretA, subscribe: ["SELECT * FROM cars"])
        let b = try Member("b", network: network, secretFile: secretB, subscribe: ["SELECT * FROM cars"])
        defer { for path in [secretA, secretB, a.directory, b.directory] { try? FileManager.default.removeItem(atPath: path) } }
        _ = try b.agent.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'b'})")

        let group = ServiceGroup(services: [a.agent, b.agent], logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            // A handshake that fails is `failed`; `refused` is for links closed at the accept (the cap).
            let refused = #"arcus_handshakes_total{transport="loopback",result="failed"} 1"#
            #expect(await eventually { a.metrics.contains(refused) || b.metrics.contains(refused) }, "\(a.metrics)\n\(b.metrics)")
            #expect(try a.ids("cars").isEmpty)
            #expect(a.metrics.contains(#"arcus_links{transport="loopback"} 0"#))
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    @Test("when the preferred transport's link is cut, the session fails over to the other one, counts it, and sync goes on")
    func failover() async throws {
        // Two transports between the same two agents: LAN (preferred) and loopback.
        let (lan, loopback) = (LoopbackNetwork(kind: .lan), LoopbackNetwork(kind: .loopback))
        let secret = try Self.secretFile()
        let reader = try Member("reader", networks: [lan, loopback], secretFile: secret, subscribe: ["SELECT * FROM cars"])
        let writer = try Member("writer", networks: [lan, loopback], secretFile: secret)
        defer { for path in [secret, reader.directory, writer.directory] { try? FileManager.default.removeItem(atPath: path) } }
        _ = try writer.agent.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'before'})")

        let group = ServiceGroup(services: [reader.agent, writer.agent], logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let bothLinks = #"arcus_links{transport="lan"} 1"#, loopbackLink = #"arcus_links{transport="loopback"} 1"#
            #expect(await eventually { reader.metrics.contains(bothLinks) && reader.metrics.contains(loopbackLink) }, "\(reader.metrics)")
            #expect(await eventually { (try? reader.ids("cars")) == ["before"] })

            lan.setInRange("reader", "writer", false)
            let failedOver = #"arcus_failovers_total{transport="loopback"} 1"#
            #expect(await eventually { reader.metrics.contains(failedOver) || writer.metrics.contains(failedOver) }, "\(reader.metrics)")
            #expect(await eventually { reader.metrics.contains(#"arcus_links{transport="lan"} 0"#) }, "\(reader.metrics)")
            _ = try writer.agent.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'after'})")
            #expect(await eventually { (try? reader.ids("cars")) == ["after", "before"] }, "nothing synced after the failover")
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}
