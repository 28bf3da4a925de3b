import ArcusAgent
import ArcusBench
import ArcusCRDT
import ArcusLoopback
import ArcusMesh

/// `arcus demo --scenario presence`: N multiplexers, each with a `PresenceTracker`, linked over
/// emulated LAN links as a `Topology` says. The demo measures how long the reports take to give
/// every peer the whole mesh with correct routes, and what they cost; then it cuts one link
/// silently, as a radio going out of range, and measures how long peer 0's graph takes to show
/// the far side unreachable (or reached another way, where the topology has one).
public struct PresenceDemo: Sendable {
    public struct Options: Sendable {
        public var peers = 8
        public var shape = Topology.Shape.chain
        /// How long the mesh runs before the cut, in seconds; over 10, periodic reports are counted too.
        public var seconds = 12.0
        /// How long to wait, at most, for the full view and for the cut to show.
        public var settleLimit = 60.0
        public var seed: UInt64 = 1
        public var session = SessionConfiguration()
        public init() {}
    }

    public struct Figures: Sendable {
        public var peers = 0
        public var shape = Topology.Shape.chain
        public var links = 0
        /// Seconds from the first link until every peer's graph names every peer and routes to it
        /// in as many hops as the topology needs; nil if that never happened.
        public var fullViewSeconds: Double?
        /// The longest route in peer 0's graph at the end of the run.
        public var maxHops = 0
        /// The topology's longest route from peer 0, which `maxHops` should equal.
        public var expectedMaxHops = 0
        /// The largest report any peer made or forwarded, in bytes.
        public var reportBytes = 0
        /// Presence frame bytes each peer sent over the run (its own reports and those it forwarded), mean.
        public var presenceBytesPerPeer = 0.0
        /// Every peer's routes were right at the end of the run.
        public var routesOK = false
        public var seconds = 0.0
        public var seed: UInt64 = 0

        /// The link cut after the run, as "a-b".
        public var cutLink = ""
        /// Peers that peer 0 can no longer reach after the cut, and those it reaches on a longer route.
        public var unreachableAfterCut = 0
        public var reroutedAfterCut = 0
        /// Seconds from the cut until peer 0's graph agreed with the cut topology (the silence has to
        /// be noticed first: three missed heartbeats); nil if it never did.
        public var afterCutSeconds: Double?

        public var jsonLine: String {
            FigureLine.json([
                ("demo", "presence"), ("peers", .int(Int64(peers))), ("topology", .string(shape.rawValue)),
                ("links", .int(Int64(links))), ("full_view_s", Self.rounded(fullViewSeconds)), ("max_hops", .int(Int64(maxHops))),
                ("report_bytes", .int(Int64(reportBytes))), ("presence_bytes_per_peer", .int(Int64(presenceBytesPerPeer.rounded()))),
                ("routes_ok", .bool(routesOK)), ("seconds", .double(seconds)), ("seed", .string(String(seed))),
            ])
        }

        public var afterCutLine: String {
            FigureLine.json([
                ("demo", "presence"), ("phase", "after_cut"), ("cut", .string(cutLink)), ("after_cut_s", Self.rounded(afterCutSeconds)),
                ("unreachable", .int(Int64(unreachableAfterCut))), ("rerouted", .int(Int64(reroutedAfterCut))),
            ])
        }

        private static func rounded(_ value: Double?) -> Value { value.map { .double(($0 * 1000).rounded() / 1000) } ?? .null }
    }

    public let options: Options

    public init(options: Options) {
        self.options = options
    }

    public func run(progress: @escaping @Sendable (String) -> Void = { _ in }) async throws -> Figures {
        let topology = Topology(options.shape, peers: options.peers, seed: options.seed)
        var random = SplitMix64(seed: options.seed)
        // Ids from the seed, so that a replay makes the same route tie-breaks.
        let ids = (0..<topology.peerCount).map { _ in PeerID(bytes: (0..<PeerID.size).map { _ in UInt8.random(in: 0...255, using: &random) })! }
        let multiplexers = try ids.enumerated().map { index, id in
            Multiplexer(localPeer: id, configuration: options.session, presence: try PresenceTracker(peer: id, name: "peer-\(index)"))
        }
        let view = PresenceView(ids: ids, trackers: multiplexers.map { $0.presenceTracker! })
        var figures = Figures()
        figures.peers = topology.peerCount
        figures.shape = options.shape
        figures.links = topology.links.count
        figures.seconds = options.seconds
        figures.seed = options.seed

        let clock = ContinuousClock()
        let start = clock.now
        var wires: [Topology.Link: SeverableLink] = [:]
        for link in topology.links {
            let (a, b) = Loopback.severablePair(.lan, name: "peer-\(link.a)-peer-\(link.b)", kind: .lan)
            async let dialled = multiplexers[link.a].add(a, as: .dialer)
            async let accepted = multiplexers[link.b].add(b, as: .acceptor)
            _ = try await (dialled, accepted)
            wires[link] = a
        }
        progress("\(topology): \(wires.count) links up after \(Self.format((clock.now - start) / .seconds(1))) s")

        // Until the run ends: the first time every peer sees every peer, and progress each second.
        let expected = Topology.hops(peers: topology.peerCount, links: topology.links)
        let end = start + .seconds(options.seconds)
        let settleEnd = end + .seconds(options.settleLimit)
        var nextReport = start + .seconds(1)
        while clock.now < end || (figures.fullViewSeconds == nil && clock.now < settleEnd) {
            if figures.fullViewSeconds == nil, view.everyPeerHasFullView(expected) {
                figures.fullViewSeconds = (clock.now - start) / .seconds(1)
                progress("every peer sees the whole mesh after \(Self.format(figures.fullViewSeconds!)) s")
            }
            if clock.now >= nextReport {
                nextReport = nextReport + .seconds(1)
                let full = view.peersWithFullView(expected)
                let known = view.trackers[0].graph.peers.count
                progress("\(Int((clock.now - start) / .seconds(1)))s: peer 0 knows \(known) of \(ids.count) peers; \(full) of \(ids.count) peers see the whole mesh")
            }
            // Checking every graph costs a BFS per peer: often enough to measure, rarely enough
            // not to take the CPU from the peers it measures.
            try await Task.sleep(for: .milliseconds(50))
        }

        figures.routesOK = view.everyPeerHasFullView(expected)
        let routes = view.trackers[0].graph.routes(from: ids[0])
        figures.maxHops = routes.values.map(\.hops).max() ?? 0
        figures.expectedMaxHops = expected[0].max() ?? 0
        var bytesSent = 0
        for multiplexer in multiplexers {
            let traffic = await multiplexer.presenceTraffic
            bytesSent += traffic.bytesSent
            figures.reportBytes = max(figures.reportBytes, traffic.largestReport)
        }
        figures.presenceBytesPerPeer = Double(bytesSent) / Double(max(ids.count, 1))

        // The cut, silenced at both ends: each side finds out when heartbeats stop.
        if let (cut, after) = Self.cut(in: topology, from: expected) {
            figures.cutLink = "\(cut.a)-\(cut.b)"
            figures.unreachableAfterCut = after[0].filter { $0 < 0 }.count
            figures.reroutedAfterCut = zip(expected[0], after[0]).filter { $1 > $0 }.count
            progress("cut the link between peer \(cut.a) and peer \(cut.b)")
            let cutAt = clock.now
            wires[cut]?.sever()
            let limit = cutAt + .seconds(options.settleLimit)
            while clock.now < limit {
                if view.hasFullView(0, after), view.trackers[0].graph.links(between: ids[cut.a], ids[cut.b]).isEmpty {
                    figures.afterCutSeconds = (clock.now - cutAt) / .seconds(1)
                    break
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            progress(figures.afterCutSeconds.map { "peer 0's graph shows the cut after \(Self.format($0)) s" } ?? "peer 0's graph never showed the cut")
        }
        for multiplexer in multiplexers { await multiplexer.close() }
        return figures
    }

    /// The link to cut: from the middle of the topology's list (for a chain, the middle of the
    /// chain), the first whose loss changes a route of peer 0's, so that there is something to see;
    /// and the hops from every peer once it is gone.
    static func cut(in topology: Topology, from expected: [[Int]]) -> (Topology.Link, [[Int]])? {
        let links = topology.links
        guard !links.isEmpty else { return nil }
        var fallback: (Topology.Link, [[Int]])?
        for offset in links.indices {
            let cut = links[(links.count / 2 + offset) % links.count]
            let after = Topology.hops(peers: topology.peerCount, links: links.filter { $0 != cut })
            if after[0] != expected[0] { return (cut, after) }
            if fallback == nil { fallback = (cut, after) }
        }
        return fallback
    }

    private static func format(_ seconds: Double) -> String {
        String(Double(Int((seconds * 1000).rounded())) / 1000)
    }
}

/// The peers' graphs against the topology they should describe.
struct PresenceView: Sendable {
    let ids: [PeerID]
    let trackers: [PresenceTracker]

    /// Whether peer `index`'s graph names every peer it can reach and routes to each in the
    /// topology's number of hops (`expected[index][j]`, -1 for none), and to no other.
    func hasFullView(_ index: Int, _ expected: [[Int]]) -> Bool {
        let graph = trackers[index].graph
        let routes = graph.routes(from: ids[index])
        return ids.indices.allSatisfy { j in
            guard j != index else { return true }
            let hops = expected[index][j]
            guard hops > 0 else { return routes[ids[j]] == nil }
            return graph.peers[ids[j]]?.name == "peer-\(j)" && routes[ids[j]]?.hops == hops
        }
    }

    /// Stops at the first peer that lacks it.
    func everyPeerHasFullView(_ expected: [[Int]]) -> Bool {
        ids.indices.allSatisfy { hasFullView($0, expected) }
    }

    func peersWithFullView(_ expected: [[Int]]) -> Int {
        ids.indices.filter { hasFullView($0, expected) }.count
    }
}
