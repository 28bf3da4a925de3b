import ArcusAgent
import ArcusCRDT
import ArcusCloud
import ArcusMesh
import Foundation
import Synchronization

/// `arcus bench cloud`: two agents in this process, each with its own store and identity and only
/// a `CloudTransport` to the NATS relay at `--cloud`, with a fresh shared secret (a mesh of its
/// own on the relay), as `arcus agent --transports cloud --cloud URL` runs them.
///
/// 1. Catch-up: the source holds N fleet-shaped documents; a fresh follower comes online and
///    catches up through the relay; timed from the follower's start until it has merged all N.
/// 2. Steady state: one document updated at the source, one at a time; the latency is from the
///    start of the write until the follower's observer sees it, p50 and p99 over the rounds.
/// 3. Idle: 2 s of no writes, what the relay carries for the mesh meanwhile (presence
///    announcements and session heartbeats).
///
/// Relay bytes are counted by a NATS connection of the bench's own, subscribed to the mesh's
/// subjects (`arcus.<mesh hash>.>`): every message a peer publishes there, once — link frames
/// (sealed session frames with their link headers) and presence. Counted are the payload bytes,
/// and, as `relay_wire_bytes_*`, the publisher's NATS protocol line around each message too
/// (`PUB <subject> [<reply>] <len>\r\n` + payload + `\r\n`). Not counted: the server's copies
/// to subscribers (`MSG` lines), JetStream's deliveries and acks on `$JS`/`_INBOX` subjects, and
/// PING/PONG.
public struct CloudBench {
    public struct Options: Sendable {
        /// The relay, `nats://HOST:PORT`.
        public var relayURL: String
        public var documents = 10_000
        public var updates = 500
        /// Rest between updates, so that each one finds the link idle.
        public var pause: Duration = .milliseconds(10)
        /// How long the idle phase listens to the relay.
        public var idle: Duration = .seconds(2)
        public var scratch = URL(fileURLWithPath: FileManager.default.temporaryDirectory.path)

        public init(relayURL: String) {
            self.relayURL = relayURL
        }
    }

    public struct Figures: Sendable {
        public var documents = 0
        public var loadSeconds = 0.0
        public var catchUpSeconds = 0.0
        public var catchUp = RelayTraffic()
        public var updates = 0
        public var latencyP50 = 0.0
        public var latencyP99 = 0.0
        public var latencyMax = 0.0
        public var updateTraffic = RelayTraffic()
        public var idleSeconds = 0.0
        public var idleTraffic = RelayTraffic()
        public var storeAndForward = false
        public var converged = false

        public var jsonLine: String {
            func r(_ x: Double, _ digits: Double) -> Value { .double((x * digits).rounded() / digits) }
            let perUpdate = Double(max(updates, 1))
            let idle = max(idleSeconds, 1e-9)
            return FigureLine.json([
                ("bench", "cloud"), ("documents", .int(Int64(documents))), ("catch_up_s", r(catchUpSeconds, 1000)),
                ("docs_per_s", .int(Int64((Double(documents) / max(catchUpSeconds, 1e-9)).rounded()))),
                ("relay_catch_up_bytes", .int(Int64(catchUp.payloadBytes))), ("converged", .bool(converged)),
                ("updates", .int(Int64(updates))), ("update_p50_ms", r(latencyP50 * 1e3, 1000)),
                ("update_p99_ms", r(latencyP99 * 1e3, 1000)), ("update_max_ms", r(latencyMax * 1e3, 1000)),
                ("relay_bytes_per_update", r(Double(updateTraffic.payloadBytes) / perUpdate, 10)),
                ("relay_messages_per_update", r(Double(updateTraffic.messages) / perUpdate, 100)),
                ("relay_wire_bytes_per_update", r(Double(updateTraffic.wireBytes) / perUpdate, 10)),
                ("relay_idle_bytes_per_s", r(Double(idleTraffic.payloadBytes) / idle, 10)),
                ("relay_idle_messages_per_s", r(Double(idleTraffic.messages) / idle, 100)),
                ("store_and_forward", .bool(storeAndForward)), ("load_s", r(loadSeconds, 1000)),
                ("transport", .string("cloud, nats relay \(storeAndForward ? "with" : "without") jetstream, sealed")),
            ])
        }
    }

    /// What the relay carried for the mesh over one phase.
    public struct RelayTraffic: Sendable {
        public var messages = 0
        /// The messages' payloads.
        public var payloadBytes = 0
        /// Payloads plus each publisher's `PUB` line and trailing CRLF.
        public var wireBytes = 0

        public init() {}

        static func - (later: RelayTraffic, earlier: RelayTraffic) -> RelayTraffic {
            var difference = RelayTraffic()
            difference.messages = later.messages - earlier.messages
            difference.payloadBytes = later.payloadBytes - earlier.payloadBytes
            difference.wireBytes = later.wireBytes - earlier.wireBytes
            return difference
        }
    }

    public let options: Options

    public init(options: Options) {
        self.options = options
    }

    public func run(progress: ((String, Double) -> Void)? = nil) async throws -> Figures {
        let url = try CloudConfiguration.parse([options.relayURL], option: "--cloud")[0]
        let scratch = options.scratch.appendingPathComponent("arcus-bench-cloud-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let secret = try TwoAgentBench.secret(in: scratch)
        let meshHash = MeshCredential.sharedSecret(try MeshCredentialFiles.sharedSecret(secret.path)).meshHash
        // Also the check that the relay answers: the agents' transports would retry forever.
        let meter = try RelayMeter(url: url, meshHash: meshHash)
        defer { meter.close() }

        let services = BenchServices()
        do {
            let figures = try await measure(in: scratch, secret: secret, url: url, meshHash: meshHash, meter: meter, services: services, progress: progress)
            await services.stop()
            return figures
        } catch {
            await services.stop()
            throw error
        }
    }

    private func measure(
        in scratch: URL, secret: URL, url: String, meshHash: String, meter: RelayMeter, services group: BenchServices,
        progress: ((String, Double) -> Void)?
    ) async throws -> Figures {
        var figures = Figures()
        figures.documents = options.documents
        let cloud = { (name: String) in
            { (identity: PeerIdentity) -> any Transport in
                var connection = NATSOptions(urls: [url])
                connection.name = "arcus bench \(name)"
                return CloudTransport(settings: CloudSettings(connection: connection, meshHash: meshHash), identity: identity)
            }
        }
        let source = try BenchAgent(name: "source", in: scratch, secret: secret, transport: cloud("source"))
        let started = monotonicSeconds()
        _ = try TwoAgentBench.writeFleet(options.documents, into: source, progress: progress)
        figures.loadSeconds = monotonicSeconds() - started
        group.start(source.agent)

        // A fresh follower comes online and catches up through the relay.
        let follower = try BenchAgent(name: "follower", in: scratch, secret: secret, transport: cloud("follower"))
        let beforeCatchUp = meter.traffic
        let catchUpStarted = monotonicSeconds()
        group.start(follower.agent)
        try await TwoAgentBench.waitForCatchUp(follower, documents: options.documents, progress: progress)
        figures.catchUpSeconds = monotonicSeconds() - catchUpStarted
        figures.catchUp = meter.traffic - beforeCatchUp
        figures.storeAndForward = [source, follower].allSatisfy { ($0.transport as? CloudTransport)?.storesFrames ?? false }

        let beforeUpdates = meter.traffic
        let latencies = try await TwoAgentBench.updateLatencies(from: source, to: follower, rounds: options.updates, pause: options.pause, progress: progress)
        figures.updateTraffic = meter.traffic - beforeUpdates
        figures.updates = latencies.count
        (figures.latencyP50, figures.latencyP99, figures.latencyMax) = (latencies.p50, latencies.p99, latencies.max)

        // Let the last update's acks settle, then listen to a mesh with nothing to say.
        try await Task.sleep(for: .milliseconds(200))
        let beforeIdle = meter.traffic
        let idleStarted = monotonicSeconds()
        progress?("idle: listening to the relay for \(options.idle)", 0)
        try await Task.sleep(for: options.idle)
        figures.idleSeconds = monotonicSeconds() - idleStarted
        figures.idleTraffic = meter.traffic - beforeIdle
        progress?("idle: listening to the relay for \(options.idle)", 1)

        figures.converged = try TwoAgentBench.sameOrders(source, follower)
        return figures
    }
}

/// A NATS connection of the bench's own that tallies every message on one mesh's subjects.
private final class RelayMeter: Sendable {
    private let connection: NATSConnection
    private let tally = Mutex(CloudBench.RelayTraffic())

    /// Throws, naming how to start a relay, when none answers at `url`.
    init(url: String, meshHash: String) throws {
        var options = NATSOptions(urls: [url])
        options.name = "arcus bench relay meter"
        options.retryOnFailedConnect = false
        do {
            connection = try NATSConnection(options)
        } catch {
            throw BenchError("""
                the relay at \(url) does not answer (\(error)); start one on this machine with \
                `nats-server -a 127.0.0.1 -p 4222 -js` and give --cloud nats://127.0.0.1:4222
                """)
        }
        let subject = "arcus.\(meshHash).>"
        _ = try connection.subscribe(subject) { [weak self] message in self?.count(message) }
        // The subscription is in place at the server before any phase starts.
        try connection.flush(within: .seconds(5))
    }

    var traffic: CloudBench.RelayTraffic { tally.withLock { $0 } }

    private func count(_ message: NATSMessage) {
        // What the publisher sent: `PUB <subject> [<reply>] <len>\r\n<payload>\r\n`.
        let pubLine = "PUB \(message.subject) \(message.reply.map { "\($0) " } ?? "")\(message.payload.count)\r\n".utf8.count
        tally.withLock { traffic in
            traffic.messages += 1
            traffic.payloadBytes += message.payload.count
            traffic.wireBytes += pubLine + message.payload.count + 2
        }
    }

    func close() { connection.close() }
}
