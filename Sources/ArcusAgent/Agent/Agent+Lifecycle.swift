import Foundation
import Logging
import Prometheus
import ServiceLifecycle

extension Agent {
    /// `arcus agent`: opens the agent, serves its API, prints the ready line on standard output,
    /// and runs until SIGTERM or SIGINT, then stops every part and returns. Logs go to `logger`
    /// (standard error, for the command), never to standard output, which scripts read.
    public static func runUntilSignalled(_ configuration: AgentConfiguration, logs: AgentLogs = AgentLogs()) async throws {
        let registry = PrometheusCollectorRegistry()
        let agent = try Agent(
            configuration: configuration, metricsFactory: PrometheusMetricsFactory(registry: registry), logger: logs.logger(level: configuration.logLevel)
        )
        // The store holds the data directory now: the log files are this agent's to write.
        do throws(CommandError) {
            try logs.open(directory: (configuration.dataDirectory as NSString).appendingPathComponent("logs"), limits: configuration.logLimits)
        } catch {
            agent.logger.warning("\(error.message); logging to standard error only")
        }
        // Transports start before the API says it is ready.
        try await agent.startTransportsOrExplain()
        let systemd = SystemdNotifier()
        // The agent's logger, whose level `ALTER SYSTEM SET log_level` changes.
        let agentLogger = agent.logger
        let http = AgentHTTPAPI.application(for: agent, registry: registry, logger: agentLogger, logs: logs) { url in
            let line = agent.readyLine(http: url)
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
            agentLogger.info("ready", metadata: ["http": "\(url)", "peer": "\(agent.identity.peerID)"])
            if let exposure = agent.httpExposure(url: url) {
                agentLogger.warning("the HTTP API is exposed beyond this machine (--http-expose): \(exposure)")
            }
            systemd.ready(status: "serving \(url) as \(agent.configuration.name)")
        }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: http), .init(service: agent)]
        if configuration.releaseStartupMemory { services.append(.init(service: StartupMemoryService(logger: agentLogger))) }
        // Last, so that it is told first: systemd hears STOPPING=1 as shutdown begins.
        services.append(.init(service: SystemdService(notifier: systemd)))
        // Shut down in reverse order: the agent first (ending the observe streams, so that the
        // server is not left waiting on them), then the HTTP server.
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services,
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: agentLogger
            )
        )
        try await group.run()
    }

    /// Starts the transports; when none could start, stops them and says why, rather than run
    /// an agent that could never link to a peer.
    package func startTransportsOrExplain() async throws(CommandError) {
        let started = await startTransports()
        if !started.isEmpty, started.allSatisfy({ $0.failure != nil }) {
            for transport in transports { await transport.stop() }
            throw CommandError(
                "no transport could start, so this agent could never link to a peer:\n"
                    + started.map { "  \($0.name): \($0.failure ?? "")" }.joined(separator: "\n")
            )
        }
    }
}
