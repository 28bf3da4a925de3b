import ArcusAgent
import ArcusStore
import ArcusSync
import Logging
import Metrics
import ServiceLifecycle

/// The Arcus agent inside your program: the same store, sync, transports and settings as
/// `arcus agent`, reached through Swift calls instead of the HTTP API.
///
/// ```swift
/// let agent = try await EmbeddedAgent.start(.init(dataDirectory: "data", transports: ["lan"]))
/// try await agent.execute("INSERT INTO readings DOCUMENTS (:reading)", arguments: ["reading": ["_id": "r1", "celsius": 21.5]])
/// for await event in try agent.observe("SELECT * FROM readings") { print(event.items) }
/// await agent.stop()
/// ```
///
/// One data directory is held by one agent at a time (the store locks it) until `stop` returns;
/// after that, a new agent may open it, in this process or another.
public final class EmbeddedAgent: Sendable {
    let agent: Agent
    private let group: ServiceGroup
    private let running: Task<Void, Never>

    /// Opens the store in `configuration.dataDirectory`, starts the transports and sync, and
    /// returns once the transports are started. Throws, saying why, when the configuration does
    /// not check, the store cannot be opened, or no transport could start.
    ///
    /// - Parameter logger: where the agent logs (swift-log); its level is set to the
    ///   configuration's `log_level`.
    public static func start(_ configuration: Configuration, logger: Logger = Logger(label: "arcus")) async throws(EmbeddedAgentError) -> EmbeddedAgent {
        let agent: Agent
        do throws(CommandError) {
            let resolved = try configuration.resolved()
            var logger = logger
            logger.logLevel = resolved.logLevel
            agent = try Agent(configuration: resolved, metricsFactory: NOOPMetricsHandler.instance, logger: logger)
            try await agent.startTransportsOrExplain()
        } catch {
            throw EmbeddedAgentError(error)
        }
        // The agent is a swift-service-lifecycle service: a group of its own runs it until `stop`.
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [.init(service: agent)], logger: logger))
        let running = Task<Void, Never> { try? await group.run() }
        return EmbeddedAgent(agent: agent, group: group, running: running)
    }

    private init(agent: Agent, group: ServiceGroup, running: Task<Void, Never>) {
        self.agent = agent
        self.group = group
        self.running = running
    }

    /// Stops sync, the transports and the observers' streams, and returns once all have
    /// stopped. Writes already committed are on disk; the store is closed and the data
    /// directory released, so this agent's calls throw from now on (`StoreError.closed`) and a
    /// new agent may open the directory. Stopping again does nothing.
    public func stop() async {
        await group.triggerGracefulShutdown()
        await running.value
        do {
            try agent.store.close()
        } catch {
            // SQLite refused to close (a statement still open): the directory stays held until
            // the process ends, as it would without `close`.
            agent.logger.warning("the store did not close: \(error); its data directory stays locked until this process ends")
        }
    }

    /// This device's peer id, as `arcus peers` and every peer show it.
    public var peerID: PeerID { agent.identity.peerID }

    /// The name peers see.
    public var name: String { agent.configuration.name }

    /// The store itself: DQL (`execute`), the builder API (`collection(_:)`), observers with
    /// callbacks (`registerObserver`), attachments. Writes made here sync like any other.
    public var store: Store { agent.store }

    /// Where the LAN transport listens (its port bound), when it runs.
    public var lanAddress: String? {
        agent.transports.first { $0.kind == .lan }?.localEndpoint.address
    }
}
