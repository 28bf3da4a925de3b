import ArcusAgent
import ArcusCRDT
import ArcusLoopback
import ArcusMesh
import Foundation
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization
import Testing

/// Agents on a radio with few links (a loopback network of kind bluetooth): each holds at most
/// its budget of links at every moment, and rotation lets writes cross a mesh that would
/// otherwise settle into islands.
@Suite("Agent: a transport with few links", .serialized)
struct AgentScarceLinkTests {
    static func agent(_ name: String, network: LoopbackNetwork, secret: String, budget: ScarceLinkBudget, in scratch: URL) throws -> Agent {
        let directory = scratch.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = AgentConfiguration(
            dataDirectory: directory.path, name: name, subscriptions: ["SELECT * FROM notes"], meshSecretFile: secret
        )
        configuration.scarceLinks = budget
        let identity = try PeerIdentity.load(orCreateAt: directory.appendingPathComponent("identity"))
        return try Agent(
            configuration: configuration, metricsFactory: PrometheusMetricsFactory(registry: PrometheusCollectorRegistry()),
            logger: Logger(label: "test.\(name)") { _ in SwiftLogNoOpLogHandler() },
            transports: [LoopbackTransport(name: name, peer: identity.peerID, on: network)]
        )
    }

    /// Peers each agent holds a Bluetooth link to now. (Two peers that dial each other at once
    /// hold two links for a moment, until the multiplexer's tie-break closes one: the budget is
    /// of peers.)
    static func bluetoothLinks(_ agent: Agent) async -> Int {
        var count = 0
        for session in await agent.multiplexer.allSessions where await session.linkStatuses.contains(where: { $0.kind == .bluetooth }) {
            count += 1
        }
        return count
    }

    @Test("eight agents that all hear each other, two links each: never more than two peers linked, and every write reaches everyone")
    func heldWithinBudget() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-scarce-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let secret = scratch.appendingPathComponent("secret").path
        #expect(try SecretFile.create(MeshSecret.random().bytes, at: secret))
        let network = LoopbackNetwork(kind: .bluetooth)
        let budget = ScarceLinkBudget(limit: 2, rotationInterval: .seconds(1))
        let agents = try (0..<8).map { try Self.agent("n\($0)", network: network, secret: secret, budget: budget, in: scratch) }
        for (index, agent) in agents.enumerated() {
            _ = try agent.store.execute("INSERT INTO notes DOCUMENTS ({'_id': 'from-\(index)'})")
        }
        let quiet = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        let group = ServiceGroup(services: agents, logger: quiet)
        let most = Highest()
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            tasks.addTask {
                while !Task.isCancelled {
                    for agent in agents {
                        let held = await Self.bluetoothLinks(agent)
                        most.record(held)
                    }
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }
            // Rotation takes a few intervals to join every island: seconds here, three minutes allowed.
            var everyone = false
            for _ in 0..<900 where !everyone {
                everyone = agents.allSatisfy { (try? $0.store.execute("SELECT * FROM notes").items.count) == agents.count }
                if !everyone { try await Task.sleep(for: .milliseconds(200)) }
            }
            var state: [String] = []
            for (index, agent) in agents.enumerated() {
                let count = (try? agent.store.execute("SELECT * FROM notes").items.count) ?? -1
                state.append("n\(index): \(count) notes, \(await Self.bluetoothLinks(agent)) links")
            }
            #expect(everyone, "not every write reached every agent: \(state)")
            await group.triggerGracefulShutdown()
            tasks.cancelAll()
        }
        #expect(most.value <= 2, "an agent was linked to \(most.value) peers over Bluetooth with a budget of 2")
        #expect(most.value >= 1, "no agent ever held a link")
    }
}

/// The highest count seen, shared between the sampling task and the test.
final class Highest: Sendable {
    private let highest = Mutex(0)
    func record(_ count: Int) { highest.withLock { $0 = max($0, count) } }
    var value: Int { highest.withLock { $0 } }
}
