import ArcusAgent
import ArcusBench
import ArcusCRDT
import ArcusLoopback
import ArcusMesh
import ArcusStore
import ArcusSync
import Foundation

/// `arcus demo`: a whole mesh on this machine. N stores, each subscribed to everything, write
/// while links drop and come back; then the writing stops and the demo measures how long the
/// mesh takes to converge, checks that nothing was lost, resurrected or duplicated, and prints
/// what each peer sent.
///
/// The write load is mesh-wide (`rate` writes per second in all, each by a peer drawn at
/// random), so runs with different N move the same data and their bytes per peer compare: a
/// peer sends about what its neighbours lack, which grows with its degree, not with N.
public struct MeshDemo: Sendable {
    public struct Options: Sendable {
        public var peers = 8
        public var shape = Topology.Shape.random
        /// With `random`, how many peers each peer hears on average.
        public var degree = Topology.defaultRandomDegree
        /// Sessions a peer holds at most, of the peers it hears (`LinkPruning`); nil: one with
        /// every peer it hears. The default is the Bluetooth link budget's.
        public var sessionLimit: Int? = ScarceLinkBudget().limit
        /// How long a lazy link holds live changes (`SyncEngine.Options.lazyPushHold`); nil:
        /// lazy push off, every session pushes each change at once.
        public var lazyPushHold: Duration? = SyncEngine.Options().lazyPushHold
        /// How long the peers write (and links drop, with `drops`).
        public var seconds = 10.0
        /// Writes per second across the whole mesh.
        public var rate = 20.0
        public var link = EmulatedLink.lan
        /// What carries the links: in-process loopback links shaped as `link` says, or the emulated
        /// Bluetooth radio's channels (AF_UNIX SOCK_SEQPACKET, paced as an LE 1M PHY; `link` is then unused).
        public var transport = DemoTransport.loopback
        /// Whether links drop and come back at random while the peers write.
        public var drops = false
        /// The mean time between two drops anywhere in the mesh.
        public var meanTimeBetweenDrops = 1.0
        /// How long after the writing stops the mesh may take to converge before the demo gives up.
        public var settleLimit = 120.0
        public var seed: UInt64 = 1
        /// Whether every link goes through the mesh handshake (a shared secret, an identity per
        /// peer) and carries its sync sessions sealed.
        public var secure = false
        public init() {}
    }

    public struct Figures: Sendable {
        public var peers = 0
        public var topology = ""
        /// Who hears whom: the topology's links and degrees.
        public var links = 0
        public var degreeMean = 0.0
        public var degreeMax = 0
        /// The links that carry sessions (all of the heard ones without a session limit), their
        /// degrees and the most hops between two peers over them.
        public var sessionLimit: Int?
        /// `Options.lazyPushHold` in milliseconds; nil: lazy push off.
        public var lazyHoldMilliseconds: Int?
        public var sessionLinks = 0
        public var sessionDegreeMean = 0.0
        public var sessionDegreeMax = 0
        public var diameter = 0
        public var seconds = 0.0
        public var writes = 0
        public var drops = 0
        public var linksMade = 0
        public var converged = false
        /// Seconds from the last write (and the last link coming back) until every peer held the same data.
        public var convergeSeconds: Double?
        /// Mean and largest bytes a peer put on its links over the whole run.
        public var bytesPerPeer = 0
        public var maxBytesPerPeer = 0
        /// Sync frames sent by all peers.
        public var messages = 0
        /// Document deltas merged, summed over the peers, and those that brought a peer nothing
        /// new (it already had every event: a copy of a change another neighbour handed it first).
        public var deliveries = 0
        public var duplicateDeliveries = 0
        /// Mean bytes a peer sent per write made anywhere in the mesh.
        public var bytesPerPeerPerWrite: Double { writes == 0 ? 0 : Double(bytesPerPeer) / Double(writes) }
        public var verification = DemoVerification.Outcome()
        public var seed: UInt64 = 0
        public var secure = false
        /// Handshakes that did not complete (links dropped during one).
        public var handshakesFailed = 0
        public var transport = DemoTransport.loopback.rawValue

        public var jsonLine: String {
            let fields: [(String, Value)] = [
                ("demo", "mesh"), ("converged", .bool(converged)),
                ("converge_s", convergeSeconds.map { .double(($0 * 1000).rounded() / 1000) } ?? .null),
                ("bytes_per_peer", .int(Int64(bytesPerPeer))), ("max_bytes_per_peer", .int(Int64(maxBytesPerPeer))),
                ("bytes_per_peer_per_write", .double((bytesPerPeerPerWrite * 10).rounded() / 10)),
                ("messages", .int(Int64(messages))), ("deliveries", .int(Int64(deliveries))),
                ("duplicate_deliveries", .int(Int64(duplicateDeliveries))),
                ("peers", .int(Int64(peers))), ("topology", .string(topology)),
                ("links", .int(Int64(links))), ("degree", .double((degreeMean * 100).rounded() / 100)),
                ("max_degree", .int(Int64(degreeMax))),
                ("session_limit", sessionLimit.map { .int(Int64($0)) } ?? .null),
                ("lazy_hold_ms", lazyHoldMilliseconds.map { .int(Int64($0)) } ?? .null), ("session_links", .int(Int64(sessionLinks))),
                ("session_degree", .double((sessionDegreeMean * 100).rounded() / 100)),
                ("max_session_degree", .int(Int64(sessionDegreeMax))), ("diameter", .int(Int64(diameter))),
                ("writes", .int(Int64(writes))), ("seconds", .double(seconds)), ("drops", .int(Int64(drops))),
                ("links_made", .int(Int64(linksMade))), ("transport", .string(transport)),
                ("lost", .int(Int64(verification.lost))), ("resurrected", .int(Int64(verification.resurrected))),
                ("unexpected", .int(Int64(verification.unexpected))), ("seed", .string(String(seed))),
            ]
            let secured: [(String, Value)] = secure ? [("secure", .bool(true)), ("handshakes_failed", .int(Int64(handshakesFailed)))] : []
            return FigureLine.json(fields + secured)
        }
    }

    public let options: Options

    public init(options: Options) {
        self.options = options
    }

    /// Runs the demo; `progress` gets a line now and then, for a person watching.
    public func run(progress: @escaping @Sendable (String) -> Void = { _ in }) async throws -> Figures {
        let heard = Topology(options.shape, peers: options.peers, seed: options.seed, degree: options.degree)
        // Sessions on a bounded subset of the links heard, the same for the same seed.
        let topology = options.sessionLimit.map { heard.pruned(LinkPruning(limit: $0), seed: options.seed) } ?? heard
        var engineOptions = SyncEngine.Options()
        engineOptions.lazyPushHold = options.lazyPushHold
        engineOptions.log = { level, message in
            if level != .info { progress("\(level.rawValue): \(message)") }
        }
        let secret = options.secure ? MeshSecret.random().secret : nil
        let mesh = try LoopbackMesh(topology: topology, links: options.transport.links(options.link), options: engineOptions, secret: secret) { storeOptions in
            try Store(inMemory: storeOptions)
        }
        defer { mesh.stop() }
        var figures = Figures()
        figures.peers = topology.peerCount
        figures.topology = topology.shape.rawValue
        figures.links = heard.links.count
        figures.degreeMean = heard.meanDegree
        figures.degreeMax = heard.maxDegree
        figures.sessionLimit = options.sessionLimit
        figures.lazyHoldMilliseconds = options.lazyPushHold.map { Int($0 / .milliseconds(1)) }
        figures.sessionLinks = topology.links.count
        figures.sessionDegreeMean = topology.meanDegree
        figures.sessionDegreeMax = topology.maxDegree
        figures.diameter = topology.diameter
        figures.seconds = options.seconds
        figures.seed = options.seed
        figures.secure = options.secure
        figures.transport = options.transport.rawValue

        var workload = DemoWorkload(peers: topology.peerCount, seed: options.seed)
        for peer in mesh.peers {
            try workload.prepare(peer.store)
            _ = try peer.engine.registerSubscription("")
        }
        mesh.connectAll()

        // Writing, with links dropping and coming back at random.
        var random = SplitMix64(seed: options.seed ^ 0xD0_0D)
        let start = ContinuousClock.now
        let end = start + .milliseconds(Int64(options.seconds * 1000))
        let writeInterval = 1 / max(options.rate, 0.001)
        var nextWrite = start
        func writeOne() throws {
            let peer = Int.random(in: 0..<topology.peerCount, using: &random)
            try workload.write(by: peer, to: mesh.peers[peer].store)
            nextWrite = nextWrite + .nanoseconds(Int64(writeInterval * 1e9))
        }
        var nextDrop = start + .milliseconds(Int64(exponential(mean: options.meanTimeBetweenDrops, &random) * 1000))
        var reconnects: [(at: ContinuousClock.Instant, link: Topology.Link)] = []
        var nextReport = start + .seconds(1)
        while ContinuousClock.now < end {
            let now = ContinuousClock.now
            while nextWrite <= now, nextWrite < end {
                try writeOne()
            }
            if options.drops, !topology.links.isEmpty, nextDrop <= now {
                let up = mesh.connectedLinks
                if let link = up.randomElement(using: &random) {
                    // The far end notices after a supervision timeout; the link is back within a few seconds.
                    mesh.drop(link, peerNoticesAfter: .milliseconds(Int64.random(in: 0...500, using: &random)))
                    figures.drops += 1
                    reconnects.append((now + .milliseconds(Int64.random(in: 200...3000, using: &random)), link))
                }
                nextDrop = now + .milliseconds(Int64(exponential(mean: options.meanTimeBetweenDrops, &random) * 1000))
            }
            reconnects.removeAll { due in
                guard due.at <= now else { return false }
                mesh.connect(due.link)
                return true
            }
            if now >= nextReport {
                nextReport = nextReport + .seconds(1)
                let elapsed = Int((now - start) / .seconds(1))
                progress("\(elapsed)s: \(workload.writes) writes, \(mesh.connectedLinks.count)/\(topology.links.count) links up, \(figures.drops) drops")
            }
            let wake = [nextWrite, options.drops ? nextDrop : end, reconnects.map(\.at).min() ?? end, end].min()!
            try await Task.sleep(until: min(wake, nextReport), clock: .continuous)
        }
        // On a busy machine the loop may wake late: make the writes it owes, so that every run
        // writes rate × seconds and runs of different N compare.
        while nextWrite < end { try writeOne() }
        mesh.connectAll()
        figures.writes = workload.writes

        // Settling: every peer must end with the same documents.
        let writingEnded = ContinuousClock.now
        let limit = writingEnded + .milliseconds(Int64(options.settleLimit * 1000))
        var nextSettleReport = writingEnded + .seconds(1)
        while true {
            let checkStart = ContinuousClock.now
            let differing = try DemoVerification.differing(mesh.peers.map(\.store))
            if differing == 0 {
                figures.convergeSeconds = (ContinuousClock.now - writingEnded) / .seconds(1)
                break
            }
            let now = ContinuousClock.now
            if now >= limit { break }
            if now >= nextSettleReport {
                nextSettleReport = nextSettleReport + .seconds(1)
                progress("settling: \(differing) of \(topology.peerCount) peers differ from peer 0")
            }
            // Comparing every store is work too: look again after at least as long as it took.
            try await Task.sleep(for: max(.milliseconds(20), (now - checkStart) * 2))
        }
        figures.verification = try DemoVerification.check(mesh.peers.map(\.store), against: workload)
        figures.converged = figures.convergeSeconds != nil && figures.verification.isClean
        let sent = (0..<topology.peerCount).map { mesh.bytesSent(by: $0) }
        figures.bytesPerPeer = sent.reduce(0, +) / max(sent.count, 1)
        figures.maxBytesPerPeer = sent.max() ?? 0
        figures.messages = (0..<topology.peerCount).reduce(0) { $0 + mesh.framesSent(by: $1) }
        let deliveries = mesh.peers.map(\.engine.deliveries)
        figures.deliveries = deliveries.reduce(0) { $0 + $1.documents }
        figures.duplicateDeliveries = deliveries.reduce(0) { $0 + $1.duplicates }
        figures.linksMade = mesh.linksMade
        figures.handshakesFailed = mesh.handshakesFailed
        return figures
    }

    private func exponential(mean: Double, _ random: inout SplitMix64) -> Double {
        -mean * log(1 - Double.random(in: 0..<1, using: &random))
    }
}

/// What carries a demo mesh's links.
public enum DemoTransport: String, Sendable, CaseIterable {
    /// In-process loopback links, shaped as an `EmulatedLink` says.
    case loopback
    /// The emulated Bluetooth radio's channels: AF_UNIX SOCK_SEQPACKET, the L2CAP code path,
    /// paced as an LE 1M PHY with a 247-byte MTU.
    case bleEmulated = "ble-emulated"

    func links(_ link: EmulatedLink) -> DemoLinks {
        switch self {
        case .loopback: return .loopback(link.conditions)
        case .bleEmulated: return .bluetoothEmulated()
        }
    }
}

/// The kinds of link the demo and the benchmarks emulate (see `LoopbackConditions`).
public enum EmulatedLink: String, Sendable, CaseIterable {
    /// LAN TCP: 64 KiB messages, 50 MB/s, 0.2 ms.
    case lan
    /// A BLE L2CAP channel: 244-byte MTU, 20 KB/s, 15 ms.
    case ble
    /// No delay and no rate limit.
    case instant

    public var conditions: LoopbackConditions {
        switch self {
        case .lan: return .lan
        case .ble: return .ble
        case .instant: return .instant
        }
    }
}
