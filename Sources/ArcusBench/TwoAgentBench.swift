import ArcusAgent
import ArcusCRDT
import ArcusLAN
import ArcusMesh
import ArcusStore
import Foundation
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization

/// What the two-agent benchmarks (`bench lan`, `bench ble-emulated`) share: agents in this
/// process with stores of their own, fleet-shaped documents at the source, a fresh follower's
/// catch-up, and single updates timed to the follower's observer.
enum TwoAgentBench {
    /// Writes `count` fleet-shaped documents into the source's `orders`, in transactions of 1,000;
    /// returns the bytes of their JSON text.
    static func writeFleet(_ count: Int, into source: BenchAgent, progress: ((String, Double) -> Void)?) throws -> Int {
        try writeFleet(count, into: source.agent.store, progress: progress)
    }

    /// Writes `count` fleet-shaped documents into `store`'s `orders`, in transactions of 1,000, a
    /// batch made only when its turn comes (a million take no more memory than a thousand);
    /// returns the bytes of their JSON text.
    static func writeFleet(_ count: Int, into store: Store, progress: ((String, Double) -> Void)?) throws -> Int {
        var generator = FleetDocuments(seed: 1)
        var jsonBytes = 0
        for start in stride(from: 0, to: count, by: 1000) {
            let batch = (start..<min(start + 1000, count)).map { generator.document($0) }
            jsonBytes += batch.reduce(0) { $0 + Value.object($1).jsonString.utf8.count }
            _ = try store.write { tx in
                for document in batch { _ = try tx.upsert(document, into: "orders") }
            }
            progress?("writing \(count) documents at the source", Double(start + 1000) / Double(count))
        }
        return jsonBytes
    }

    /// Returns once the follower's engine has merged `documents` documents. (A subscription's
    /// documents do not raise the follower's version vector — only a whole-store exchange does —
    /// so the engine's count of documents merged tells when all have arrived.)
    static func waitForCatchUp(_ follower: BenchAgent, documents: Int, progress: ((String, Double) -> Void)?) async throws {
        let started = monotonicSeconds()
        while true {
            let received = await follower.agent.engine.statisticsSoFar.documentsReceived
            if received >= documents { return }
            progress?("a fresh follower catching up (\(received) documents)", Double(received) / Double(documents))
            guard monotonicSeconds() - started < 1800 else { throw BenchError("the follower had not caught up after 30 minutes") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Updates one document at the source `rounds` times, one at a time, each timed from the start
    /// of the write until the follower's observer sees it; sorted.
    static func updateLatencies(
        from source: BenchAgent, to follower: BenchAgent, rounds: Int, pause: Duration, progress: ((String, Double) -> Void)?
    ) async throws -> Latencies {
        let id = FleetDocuments.id(7)
        let seen = AsyncStream.makeStream(of: Int64.self, bufferingPolicy: .bufferingNewest(16))
        let observer = try follower.agent.store.registerObserver("SELECT * FROM orders WHERE _id = :id", arguments: ["id": .string(id)]) { event in
            if case .object(let document)? = event.items.first, case .int(let round)? = document["benchRound"] { seen.continuation.yield(round) }
        }
        defer { observer.cancel() }
        var iterator = seen.stream.makeAsyncIterator()
        return try await UpdateRounds.time(rounds, pause: pause, observed: seen.continuation, seen: &iterator, describe: "one update at a time", progress: progress) { round in
            _ = try source.agent.store.write { tx in
                _ = try tx.upsert(["_id": .string(id), "benchRound": .int(round)], into: "orders")
            }
        }
    }

    /// Whether both hold the same `orders`.
    static func sameOrders(_ a: BenchAgent, _ b: BenchAgent) throws -> Bool {
        try a.agent.store.execute("SELECT * FROM orders").items == b.agent.store.execute("SELECT * FROM orders").items
    }

    /// A fresh shared secret (0600) in `scratch`.
    static func secret(in scratch: URL) throws -> URL {
        let secret = scratch.appendingPathComponent("secret")
        try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: secret)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret.path)
        return secret
    }
}

/// Seconds, sorted, with the percentiles the benchmarks print.
struct Latencies {
    let sorted: [Double]

    init(_ samples: [Double]) { sorted = samples.sorted() }

    var count: Int { sorted.count }
    var p50: Double { sorted.isEmpty ? 0 : sorted[(sorted.count - 1) / 2] }
    var p99: Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)] }
    var max: Double { sorted.last ?? 0 }
}

/// One agent of a benchmark: its data directory in the scratch, the transport it is given (made
/// with its identity, so that the transport can advertise its id), and a Prometheus registry of
/// its own, read as `GET /metrics` would show it.
struct BenchAgent {
    let agent: Agent
    let transport: any Transport
    let registry = PrometheusCollectorRegistry()

    init(name: String, in scratch: URL, secret: URL, transport makeTransport: (PeerIdentity) -> any Transport) throws {
        let data = scratch.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let identity = try PeerIdentity.load(orCreateAt: data.appendingPathComponent("identity"))
        transport = makeTransport(identity)
        let configuration = AgentConfiguration(
            dataDirectory: data.path, name: name, subscriptions: ["SELECT * FROM orders"], meshSecretFile: secret.path
        )
        var logger = Logger(label: "arcus.bench.\(name)")
        logger.logLevel = ProcessInfo.processInfo.environment["ARCUS_BENCH_LOG"] == nil ? .warning : .debug
        agent = try Agent(configuration: configuration, metricsFactory: PrometheusMetricsFactory(registry: registry), logger: logger, transports: [transport])
    }

    /// Where a LAN transport listens, once it has bound its port.
    func listeningAddress() async throws -> LANAddress {
        for _ in 0..<1000 {
            if let address = try? LANAddress(parsing: transport.localEndpoint.address), address.port != 0 { return address }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw BenchError("the source's LAN transport did not start listening within 10 s")
    }

    /// `arcus_link_bytes_total{transport=…,direction=…}`, as the agent's metrics count it.
    func linkBytes(_ kind: LinkKind, direction: String) -> Int {
        let text = String(decoding: registry.emitToBuffer(), as: UTF8.self)
        let prefix = #"arcus_link_bytes_total{transport="\#(kind.rawValue)",direction="\#(direction)"} "#
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return 0 }
        return Int(Double(line.dropFirst(prefix.count)) ?? 0)
    }
}

/// Runs agents as services (their transports, sessions and sync) until `stop()`.
final class BenchServices: Sendable {
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
