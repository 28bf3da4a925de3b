import ArcusAgent
import ArcusBluetooth
import ArcusCRDT
import ArcusMesh
import Foundation

/// `arcus bench ble-emulated`: two agents in this process over one emulated Bluetooth LE link
/// (the same SOCK_SEQPACKET channel code as L2CAP, over AF_UNIX, paced as an LE 1M PHY with its
/// L2CAP and link-layer overhead and a connection interval of latency), sealed as agents run.
///
/// 1. Bulk: a fresh follower catches up N fleet-shaped documents. `goodput_ratio` is the sync
///    frames' bytes per second, from the link coming up until the last document merged, as a
///    fraction of what the link carries in full SDUs (`EmulatedPHY.goodputBytesPerSecond`, the
///    figure l2test would measure on a radio): Arcus's own overhead and stalls, nothing else.
/// 2. Single updates, one at a time, timed to the follower's observer, against the link's
///    one-way latency (the connection interval).
public struct BLEBench {
    public struct Options: Sendable {
        public var documents = 30_000
        public var updates = 100
        public var pause: Duration = .milliseconds(20)
        public var mtu = 247
        /// The PHY's rate, bits per second (LE 1M by default), and its connection interval.
        public var bitsPerSecond = 1_000_000.0
        public var connectionInterval: Duration = .microseconds(7_500)
        var phy: EmulatedPHY { EmulatedPHY(bitsPerSecond: bitsPerSecond, connectionInterval: connectionInterval) }
        /// The emulated radio's directory lives here (socket paths must fit sun_path).
        public var scratch = URL(fileURLWithPath: "/tmp")
        /// Real controllers instead of the emulated radio (`arcus bench ble --adapter`): the
        /// source's and the follower's. The link's rate is then `referenceBytesPerSecond`, what
        /// l2test moved between the same two, when given.
        public var adapters: (source: BluetoothAdapter, follower: BluetoothAdapter)?
        public var referenceBytesPerSecond: Double?

        public init() {}
    }

    public struct Figures: Sendable {
        public var documents = 0
        public var syncBytes = 0
        public var wireBytes = 0
        public var bulkSeconds = 0.0
        public var linkBytesPerSecond = 0.0
        public var updates = 0
        public var updateP50 = 0.0
        public var updateP99 = 0.0
        public var linkLatency = 0.0
        public var converged = false
        public var onAdapters = false
        /// The CPU both agents (this process) used from the wait for the link to the catch-up:
        /// near `bulkSeconds` times the cores, the bulk was held back by the CPU, not the link.
        public var bulkCPUSeconds = 0.0

        public var goodputRatio: Double { bulkSeconds > 0 && linkBytesPerSecond > 0 ? Double(syncBytes) / bulkSeconds / linkBytesPerSecond : 0 }

        public var jsonLine: String {
            func r(_ x: Double, _ digits: Double) -> Value { .double((x * digits).rounded() / digits) }
            return FigureLine.json([
                ("bench", onAdapters ? "ble" : "ble-emulated"), ("goodput_ratio", r(goodputRatio, 1000)), ("documents", .int(Int64(documents))),
                ("sync_bytes", .int(Int64(syncBytes))), ("wire_bytes", .int(Int64(wireBytes))), ("bulk_s", r(bulkSeconds, 1000)),
                ("goodput_bytes_per_s", .int(Int64((Double(syncBytes) / Swift.max(bulkSeconds, 1e-9)).rounded()))),
                ("link_bytes_per_s", .int(Int64(linkBytesPerSecond.rounded()))),
                ("updates", .int(Int64(updates))), ("update_p50_ms", r(updateP50 * 1e3, 1000)),
                ("update_p99_ms", r(updateP99 * 1e3, 1000)), ("link_latency_ms", r(linkLatency * 1e3, 1000)),
                ("update_p50_over_link_latency", r(linkLatency > 0 ? updateP50 / linkLatency : 0, 100)), ("converged", .bool(converged)),
                ("bulk_cpu_s", r(bulkCPUSeconds, 1000)),
            ])
        }
    }

    public let options: Options

    public init(options: Options) {
        self.options = options
    }

    public func run(progress: ((String, Double) -> Void)? = nil) async throws -> Figures {
        let radio = options.scratch.appendingPathComponent("arcus-ble-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: radio, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: radio) }
        let secret = try TwoAgentBench.secret(in: radio)
        let services = BenchServices()
        do {
            let figures = try await measure(radio: radio, secret: secret, services: services, progress: progress)
            await services.stop()
            return figures
        } catch {
            await services.stop()
            throw error
        }
    }

    private func measure(radio: URL, secret: URL, services: BenchServices, progress: ((String, Double) -> Void)?) async throws -> Figures {
        var figures = Figures()
        figures.documents = options.documents
        figures.linkBytesPerSecond = options.phy.goodputBytesPerSecond(mtu: options.mtu)
        figures.linkLatency = Double(options.phy.latencyNanoseconds) / 1e9
        let settings = EmulatedRadioSettings(directory: radio.path, mtu: options.mtu, phy: options.phy, scanInterval: .milliseconds(100))
        func ble(_ adapter: BluetoothAdapter?) -> @Sendable (PeerIdentity) -> any Transport {
            let radio: BluetoothRadio = adapter.map { .l2cap(L2CAPRadioSettings(adapter: $0, receiveMTU: UInt16(options.mtu))) } ?? .emulated(settings)
            return { identity in BluetoothTransport(radio: radio, peer: identity.peerID, meshHash: "") }
        }
        if options.adapters != nil {
            figures.onAdapters = true
            figures.linkBytesPerSecond = options.referenceBytesPerSecond ?? 0
            figures.linkLatency = 0
        }
        let agents = radio.appendingPathComponent("a")
        let source = try BenchAgent(name: "source", in: agents, secret: secret, transport: ble(options.adapters?.source))
        _ = try TwoAgentBench.writeFleet(options.documents, into: source, progress: progress)
        services.start(source.agent)
        let follower = try BenchAgent(name: "follower", in: agents, secret: secret, transport: ble(options.adapters?.follower))
        services.start(follower.agent)

        // The bulk is timed from the moment the link is bound, so that discovery does not count:
        // from when the session says it bound it, as seen when it is over (asked while the
        // catch-up runs, the session may answer only once it is over: in the VM the bulk
        // measured 2 ms).
        var linked: ContinuousClock.Instant?
        let started = ContinuousClock.now
        let cpuAtStart = Self.processCPUSeconds()
        while linked == nil {
            for session in await follower.agent.multiplexer.allSessions where await !session.linkStatuses.isEmpty { linked = .now }
            guard ContinuousClock.now - started < .seconds(60) else { throw BenchError("the two agents did not link over Bluetooth within 60 s") }
            if linked == nil { try await Task.sleep(for: .milliseconds(2)) }
        }
        try await TwoAgentBench.waitForCatchUp(follower, documents: options.documents, progress: progress)
        let caughtUp = ContinuousClock.now
        figures.bulkCPUSeconds = Self.processCPUSeconds() - cpuAtStart
        for session in await follower.agent.multiplexer.allSessions {
            for link in await session.linkStatuses { linked = min(linked!, link.boundAt) }
        }
        figures.bulkSeconds = (caughtUp - linked!).inSeconds
        figures.syncBytes = await follower.agent.engine.statisticsSoFar.bytesReceived
        figures.wireBytes = follower.linkBytes(.bluetooth, direction: "received")

        let latencies = try await TwoAgentBench.updateLatencies(from: source, to: follower, rounds: options.updates, pause: options.pause, progress: progress)
        (figures.updates, figures.updateP50, figures.updateP99) = (latencies.count, latencies.p50, latencies.p99)
        figures.converged = try TwoAgentBench.sameOrders(source, follower)
        return figures
    }

    /// User and system CPU time of this process so far (getrusage), in seconds.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
