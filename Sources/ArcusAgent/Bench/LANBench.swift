import ArcusCRDT
import ArcusLAN
import ArcusMesh
import ArcusStore
import Foundation
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization

/// `arcus bench lan`: two agents in this process, each with its own store, identity and LAN
/// transport, linked over loopback TCP (127.0.0.1) with a fresh shared secret, as `arcus agent
/// --transports lan --peer` links them. mDNS is left out, so the bench publishes nothing.
///
/// 1. Catch-up: the source holds N documents shaped like the fleet trace's; a fresh follower
///    dials it; timed from the follower's start until its version vector covers the source's.
///    Bytes are every byte on the TCP link both ways (handshake, session frames, AEAD tags),
///    from the agents' `arcus_link_bytes_total`, against the documents' JSON text.
/// 2. Steady state: one document updated at the source, one at a time; the latency is from the
///    start of the write until the follower's observer sees the new value (commit, sync, merge,
///    observer), p50 and p99 over the rounds.
public struct LANBench {
    public struct Options: Sendable {
        public var documents = 100_000
        public var updates = 500
        /// Rest between updates, so that each one finds the link idle.
        public var pause: Duration = .milliseconds(10)
        public var scratch = URL(fileURLWithPath: FileManager.default.temporaryDirectory.path)

        public init() {}
    }

    public struct Figures: Sendable {
        public var documents = 0
        public var jsonBytes = 0
        public var loadSeconds = 0.0
        public var catchUpSeconds = 0.0
        public var wireBytes = 0
        public var syncFrameBytes = 0
        public var updates = 0
        public var latencyP50 = 0.0
        public var latencyP99 = 0.0
        public var latencyMax = 0.0
        public var converged = false

        public var jsonLine: String {
            func r(_ x: Double, _ digits: Double) -> Value { .double((x * digits).rounded() / digits) }
            return FigureLine.json([
                ("bench", "lan"), ("documents", .int(Int64(documents))), ("catch_up_s", r(catchUpSeconds, 1000)),
                ("docs_per_s", .int(Int64((Double(documents) / max(catchUpSeconds, 1e-9)).rounded()))),
                ("wire_bytes", .int(Int64(wireBytes))), ("json_bytes", .int(Int64(jsonBytes))),
                ("wire_per_json", r(Double(wireBytes) / Double(max(jsonBytes, 1)), 1000)),
                ("sync_frame_bytes", .int(Int64(syncFrameBytes))), ("converged", .bool(converged)),
                ("updates", .int(Int64(updates))), ("update_p50_ms", r(latencyP50 * 1e3, 1000)),
                ("update_p99_ms", r(latencyP99 * 1e3, 1000)), ("update_max_ms", r(latencyMax * 1e3, 1000)),
                ("load_s", r(loadSeconds, 1000)), ("transport", "lan tcp 127.0.0.1, sealed"),
            ])
        }
    }

    public let options: Options

    public init(options: Options) {
        self.options = options
    }

    public func run(progress: ((String, Double) -> Void)? = nil) async throws -> Figures {
        let scratch = options.scratch.appendingPathComponent("arcus-bench-lan-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let secret = scratch.appendingPathComponent("secret")
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: secret)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret.path)

        let services = BenchServices()
        do {
            let figures = try await measure(in: scratch, secret: secret, services: services, progress: progress)
            await services.stop()
            return figures
        } catch {
            await services.stop()
            throw error
        }
    }

    private func measure(
        in scratch: URL, secret: URL, services group: BenchServices, progress: ((String, Double) -> Void)?
    ) async throws -> Figures {
        var figures = Figures()
        figures.documents = options.documents
        let source = try BenchAgent(name: "source", in: scratch, secret: secret, peers: [])

        // The source's documents, written before anyone links, in transactions of 1,000.
        var generator = FleetDocuments(seed: 1)
        let started = monotonicSeconds()
        for start in stride(from: 0, to: options.documents, by: 1000) {
            let batch = (start..<min(start + 1000, options.documents)).map { generator.document($0) }
            figures.jsonBytes += batch.reduce(0) { $0 + Value.object($1).jsonString.utf8.count }
            _ = try source.agent.store.write { tx in
                for document in batch { _ = try tx.upsert(document, into: "orders") }
            }
            progress?("writing \(options.documents) documents at the source", Double(start + 1000) / Double(options.documents))
        }
        figures.loadSeconds = monotonicSeconds() - started
        group.start(source.agent)
        let address = try await source.listeningAddress()

        // A fresh follower dials it and catches up.
        let follower = try BenchAgent(name: "follower", in: scratch, secret: secret, peers: [address])
        let catchUpStarted = monotonicSeconds()
        group.start(follower.agent)
        // A subscription's documents do not raise the follower's version vector (only a whole-store
        // exchange does), so the engine's count of documents merged tells when all have arrived.
        while true {
            let received = await follower.agent.engine.statisticsSoFar.documentsReceived
            if received >= options.documents { break }
            progress?("a fresh follower catching up (\(received) documents)", Double(received) / Double(options.documents))
            guard monotonicSeconds() - catchUpStarted < 1800 else { throw BenchError("the follower had not caught up after 30 minutes") }
            try await Task.sleep(for: .milliseconds(5))
        }
        figures.catchUpSeconds = monotonicSeconds() - catchUpStarted
        figures.wireBytes = follower.linkBytes(direction: "received") + follower.linkBytes(direction: "sent")
        let statistics = await follower.agent.engine.statisticsSoFar
        figures.syncFrameBytes = statistics.bytesReceived + statistics.bytesSent

        // One update at a time, seen by an observer at the follower.
        let id = FleetDocuments.id(7)
        let seen = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(16))
        let observer = try follower.agent.store.registerObserver("SELECT * FROM orders WHERE _id = :id", arguments: ["id": .string(id)]) { event in
            if case .object(let document)? = event.items.first, let round = document["benchRound"] { seen.continuation.yield(round) }
        }
        defer { observer.cancel() }
        var iterator = seen.stream.makeAsyncIterator()
        var latencies: [Double] = []
        for round in 0..<options.updates {
            let written = monotonicSeconds()
            _ = try source.agent.store.write { tx in
                _ = try tx.upsert(["_id": .string(id), "benchRound": .int(Int64(round))], into: "orders")
            }
            // Past 30 s, the stream is finished and the bench gives up.
            let watchdog = Task {
                try await Task.sleep(for: .seconds(30))
                seen.continuation.finish()
            }
            while true {
                guard let value = await iterator.next() else {
                    throw BenchError("update \(round) did not reach the follower within 30 s")
                }
                if value == .int(Int64(round)) { break }
            }
            watchdog.cancel()
            latencies.append(monotonicSeconds() - written)
            progress?("one update at a time", Double(round + 1) / Double(options.updates))
            try await Task.sleep(for: options.pause)
        }
        latencies.sort()
        figures.updates = latencies.count
        if !latencies.isEmpty {
            figures.latencyP50 = latencies[(latencies.count - 1) / 2]
            figures.latencyP99 = latencies[min(latencies.count - 1, Int((Double(latencies.count) * 0.99).rounded(.up)) - 1)]
            figures.latencyMax = latencies.last!
        }
        figures.converged = try source.agent.store.execute("SELECT * FROM orders").items == follower.agent.store.execute("SELECT * FROM orders").items
        return figures
    }
}

/// One agent of the bench: its data directory in the scratch, a LAN transport on 127.0.0.1 with
/// static peers only, and a Prometheus registry of its own, read as `GET /metrics` would show it.
private struct BenchAgent {
    let agent: Agent
    let transport: LANTransport
    let registry = PrometheusCollectorRegistry()

    init(name: String, in scratch: URL, secret: URL, peers: [LANAddress]) throws {
        let data = scratch.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let identity = try PeerIdentity.load(orCreateAt: data.appendingPathComponent("identity"))
        transport = LANTransport(
            listeningOn: LANAddress(host: "127.0.0.1", port: 0), peer: identity.peerID, discovery: [StaticPeers(peers)]
        )
        let configuration = AgentConfiguration(
            dataDirectory: data.path, name: name, listen: LANAddress(host: "127.0.0.1", port: 0), transports: [.lan], peers: peers,
            subscriptions: ["SELECT * FROM orders"], meshSecretFile: secret.path
        )
        var logger = Logger(label: "arcus.bench.\(name)")
        logger.logLevel = ProcessInfo.processInfo.environment["ARCUS_BENCH_LOG"] == nil ? .warning : .debug
        agent = try Agent(configuration: configuration, metricsFactory: PrometheusMetricsFactory(registry: registry), logger: logger, transports: [transport])
    }

    /// Where the transport listens, once it has bound its port.
    func listeningAddress() async throws -> LANAddress {
        for _ in 0..<1000 {
            if let address = try? LANAddress(parsing: transport.localEndpoint.address), address.port != 0 { return address }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw BenchError("the source's LAN transport did not start listening within 10 s")
    }

    /// `arcus_link_bytes_total{transport="lan",direction=…}`, as the agent's metrics count it.
    func linkBytes(direction: String) -> Int {
        let text = String(decoding: registry.emitToBuffer(), as: UTF8.self)
        let prefix = #"arcus_link_bytes_total{transport="lan",direction="\#(direction)"} "#
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return 0 }
        return Int(Double(line.dropFirst(prefix.count)) ?? 0)
    }
}

/// Runs agents as services (their transports, sessions and sync) until `stop()`.
private final class BenchServices: Sendable {
    private let running = Mutex<[(group: ServiceGroup, task: Task<Void, Never>)]>([])

    func start(_ agent: Agent) {
        var logger = Logger(label: "arcus.bench")
        logger.logLevel = .warning
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [.init(service: agent)], logger: logger))
        let task = Task { _ = try? await group.run() }
        running.withLock { $0.append((group, task)) }
    }

    /// Stops the agents, the last started first, and waits until each has stopped.
    func stop() async {
        for (group, task) in running.withLock({ $0 }).reversed() {
            await group.triggerGracefulShutdown()
            await task.value
        }
    }
}
