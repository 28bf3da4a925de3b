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
        let secret = try TwoAgentBench.secret(in: scratch)

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
        let lan = { (name: String, peers: [LANAddress]) in
            { (identity: PeerIdentity) -> any Transport in
                LANTransport(listeningOn: LANAddress(host: "127.0.0.1", port: 0), peer: identity.peerID, discovery: [StaticPeers(peers)])
            }
        }
        let source = try BenchAgent(name: "source", in: scratch, secret: secret, transport: lan("source", []))
        let started = monotonicSeconds()
        figures.jsonBytes = try TwoAgentBench.writeFleet(options.documents, into: source, progress: progress)
        figures.loadSeconds = monotonicSeconds() - started
        group.start(source.agent)
        let address = try await source.listeningAddress()

        // A fresh follower dials it and catches up.
        let follower = try BenchAgent(name: "follower", in: scratch, secret: secret, transport: lan("follower", [address]))
        let catchUpStarted = monotonicSeconds()
        group.start(follower.agent)
        try await TwoAgentBench.waitForCatchUp(follower, documents: options.documents, progress: progress)
        figures.catchUpSeconds = monotonicSeconds() - catchUpStarted
        figures.wireBytes = follower.linkBytes(.lan, direction: "received") + follower.linkBytes(.lan, direction: "sent")
        let statistics = await follower.agent.engine.statisticsSoFar
        figures.syncFrameBytes = statistics.bytesReceived + statistics.bytesSent

        let latencies = try await TwoAgentBench.updateLatencies(from: source, to: follower, rounds: options.updates, pause: options.pause, progress: progress)
        figures.updates = latencies.count
        (figures.latencyP50, figures.latencyP99, figures.latencyMax) = (latencies.p50, latencies.p99, latencies.max)
        figures.converged = try TwoAgentBench.sameOrders(source, follower)
        return figures
    }
}
