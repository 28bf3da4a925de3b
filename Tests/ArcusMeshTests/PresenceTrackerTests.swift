import ArcusMesh
import ArcusTestSupport
import ArcusTransportConformance
import Testing

@Suite("Presence tracker")
struct PresenceTrackerTests {
    typealias F = PresenceFixtures

    /// Trackers that hand each other reports as bytes, as the multiplexer would: a report goes to
    /// every neighbour, and a neighbour that finds it new passes the same bytes on.
    struct Relay {
        let trackers: [PresenceTracker]
        /// Indices of each tracker's neighbours.
        let neighbours: [[Int]]
        var messages = 0

        mutating func broadcast(from origin: Int) throws {
            var queue = neighbours[origin].map { (to: $0, from: origin, bytes: trackers[origin].makeReport().encoded()) }
            while !queue.isEmpty {
                let (to, from, bytes) = queue.removeFirst()
                messages += 1
                if try trackers[to].ingest(bytes) {
                    queue += neighbours[to].filter { $0 != from }.map { ($0, to, bytes) }
                }
            }
        }

        mutating func broadcastAll() throws {
            for index in trackers.indices { try broadcast(from: index) }
        }
    }

    /// Five peers in a chain, 0 - 1 - 2 - 3 - 4, by alternating transports.
    static func chain(clock: ManualClock) throws -> Relay {
        let trackers = try (0..<5).map { try PresenceTracker(peer: F.peer(UInt8($0 + 1)), name: "p\($0)", firstSequence: 0, now: clock.reader) }
        for i in 0..<4 {
            let kind: LinkKind = i % 2 == 0 ? .lan : .bluetooth
            trackers[i].linkUp(peer: trackers[i + 1].peer, kind: kind)
            trackers[i + 1].linkUp(peer: trackers[i].peer, kind: kind)
            trackers[i].linkQuality(peer: trackers[i + 1].peer, kind: kind, rtt: .milliseconds(10 * (i + 1)), throughput: 1000)
        }
        return Relay(trackers: trackers, neighbours: [[1], [0, 2], [1, 3], [2, 4], [3]])
    }

    @Test("five peers in a chain converge to one graph, with routes through others")
    func chainConverges() throws {
        var relay = try Self.chain(clock: ManualClock())
        try relay.broadcastAll()
        let graphs = relay.trackers.map(\.graph)
        for graph in graphs {
            #expect(graph.peers == graphs[0].peers && graph.links == graphs[0].links)
        }
        let graph = graphs[0]
        #expect(graph.peers.count == 5 && graph.links.count == 4)
        #expect(graph.peers.values.map { $0.name ?? "?" }.sorted() == ["p0", "p1", "p2", "p3", "p4"])
        #expect(graph.links[.init(F.peer(2), F.peer(3), kind: .bluetooth)] == LinkQuality(rttMilliseconds: 20, throughput: 1000))
        for (index, tracker) in relay.trackers.enumerated() {
            let routes = tracker.graph.routes(from: tracker.peer)
            #expect(routes.count == 4)
            for (other, route) in routes {
                let otherIndex = Int(other.bytes[0]) - 1
                #expect(route.hops == abs(otherIndex - index))
                #expect(route.nextHop == F.peer(UInt8(index + (otherIndex > index ? 1 : -1) + 1)))
            }
        }
        print("presence chain of 5: \(relay.messages) report deliveries for one round")
    }

    @Test("random meshes converge in any order, and a link leaves the graph of all who hear one end report it down",
          arguments: SeededRandom.seeds(count: 4, test: "presence-mesh"))
    func randomMeshes(seed: UInt64) throws {
        print("presence-mesh seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let count = Int.random(in: 3...9, using: &rng)
        let trackers = try (0..<count).map { try PresenceTracker(peer: F.peer(UInt8($0 + 1)), name: "p\($0)", firstSequence: 0, now: ManualClock().reader) }
        var neighbours = [[Int]](repeating: [], count: count)
        var edges: [(Int, Int, LinkKind)] = []
        func connect(_ a: Int, _ b: Int, _ kind: LinkKind) {
            guard !edges.contains(where: { ($0.0, $0.1, $0.2) == (a, b, kind) || ($0.0, $0.1, $0.2) == (b, a, kind) }) else { return }
            edges.append((a, b, kind))
            if !neighbours[a].contains(b) { neighbours[a].append(b); neighbours[b].append(a) }
            trackers[a].linkUp(peer: trackers[b].peer, kind: kind)
            trackers[b].linkUp(peer: trackers[a].peer, kind: kind)
            trackers[a].linkQuality(peer: trackers[b].peer, kind: kind, rtt: .milliseconds(Int.random(in: 1...300, using: &rng)), throughput: nil)
            trackers[b].linkQuality(peer: trackers[a].peer, kind: kind, rtt: nil, throughput: UInt64.random(in: 1...1 << 30, using: &rng))
        }
        // A random tree keeps everyone connected; extra links make cycles and parallel kinds.
        for b in 1..<count { connect(Int.random(in: 0..<b, using: &rng), b, LinkKind.allCases.randomElement(using: &rng)!) }
        for _ in 0..<Int.random(in: 0...count, using: &rng) {
            let a = Int.random(in: 0..<count, using: &rng), b = Int.random(in: 0..<count, using: &rng)
            if a != b { connect(a, b, LinkKind.allCases.randomElement(using: &rng)!) }
        }
        var relay = Relay(trackers: trackers, neighbours: neighbours)
        for origin in (0..<count).shuffled(using: &rng) { try relay.broadcast(from: origin) }

        func expectConverged(links: Int) {
            let graphs = trackers.map(\.graph)
            for graph in graphs { #expect(graph.peers == graphs[0].peers && graph.links == graphs[0].links) }
            #expect(graphs[0].links.count == links && graphs[0].peers.count == count)
            for tracker in trackers {
                #expect(tracker.graph.routes(from: tracker.peer).count == count - 1)
            }
        }
        expectConverged(links: edges.count)

        // Both ends see the link close; only one end's report goes out.
        let (a, b, kind) = edges.randomElement(using: &rng)!
        trackers[a].linkDown(peer: trackers[b].peer, kind: kind)
        trackers[b].linkDown(peer: trackers[a].peer, kind: kind)
        let reporter = Bool.random(using: &rng) ? a : b
        let remaining = edges.filter { ($0.0, $0.1, $0.2) != (a, b, kind) }
        relay = Relay(trackers: trackers, neighbours: (0..<count).map { i in
            Array(Set(remaining.flatMap { $0.0 == i ? [$0.1] : $0.1 == i ? [$0.0] : [] }))
        })
        try relay.broadcast(from: reporter)
        let gone = PresenceGraph.Edge(trackers[a].peer, trackers[b].peer, kind: kind)
        // Everyone the reporter still reaches hears of it; if the link was a bridge, the far side
        // learns from the other end's report.
        let heard = Set(trackers[reporter].graph.routes(from: trackers[reporter].peer).keys).union([trackers[reporter].peer])
        for tracker in trackers where heard.contains(tracker.peer) {
            #expect(tracker.graph.links[gone] == nil)
        }
        try relay.broadcast(from: reporter == a ? b : a)
        for tracker in trackers { #expect(tracker.graph.links[gone] == nil) }
    }

    @Test("a repeated, older or own report is not news")
    func notNews() throws {
        let clock = ManualClock()
        let a = try PresenceTracker(peer: F.peer(1), name: "a", firstSequence: 10, now: clock.reader)
        let b = try PresenceTracker(peer: F.peer(2), name: "b", firstSequence: 10, now: clock.reader)
        let first = b.makeReport().encoded()
        let second = b.makeReport().encoded()
        #expect(try a.ingest(second))
        #expect(try !a.ingest(second))
        #expect(try !a.ingest(first))
        #expect(try !a.ingest(a.makeReport().encoded()))
        #expect(throws: (any Error).self) { try a.ingest([1, 2, 3]) }
    }

    @Test("reports from more origins than the tracker keeps are refused until some expire")
    func capacity() throws {
        let clock = ManualClock()
        let tracker = try PresenceTracker(peer: F.peer(1), name: "a", firstSequence: 0, maximumPeers: 2, now: clock.reader)
        #expect(tracker.ingest(PresenceReport(origin: F.peer(2), name: "b", sequence: 1)))
        #expect(tracker.ingest(PresenceReport(origin: F.peer(3), name: "c", sequence: 1)))
        #expect(!tracker.ingest(PresenceReport(origin: F.peer(4), name: "d", sequence: 1)))
        #expect(tracker.ingest(PresenceReport(origin: F.peer(3), name: "c", sequence: 2)))
        clock.advance(by: .seconds(31))
        #expect(tracker.ingest(PresenceReport(origin: F.peer(4), name: "d", sequence: 1)))
        #expect(tracker.graph.peers.keys.sorted() == [F.peer(1), F.peer(4)])
    }

    @Test("a peer that stops reporting drops out after the time to live")
    func expiry() throws {
        let clock = ManualClock()
        var relay = try Self.chain(clock: clock)
        try relay.broadcastAll()
        // Everyone but peer 4 (index 4) refreshes every 10 s; it stops.
        for _ in 0..<3 {
            clock.advance(by: .seconds(10))
            for index in 0..<4 { try relay.broadcast(from: index) }
            relay.trackers.forEach { $0.expire() }
        }
        #expect(relay.trackers[0].graph.peers[F.peer(5)]?.name == "p4")
        clock.advance(by: .seconds(1))
        #expect(relay.trackers[0].expire() == [F.peer(5)])
        // Peer 3 still lists its link to 4 itself, so 4 stays as an unnamed neighbour, 4 hops away.
        let graph = relay.trackers[0].graph
        #expect(graph.peers[F.peer(5)]?.name == nil)
        #expect(graph.route(from: F.peer(1), to: F.peer(5))?.hops == 4)
        // Once 3 sees its link to 4 go down, 4 is gone from everyone's graph.
        relay.trackers[3].linkDown(peer: F.peer(5), kind: .bluetooth)
        try relay.broadcast(from: 3)
        for tracker in relay.trackers.prefix(4) {
            tracker.expire()
            #expect(tracker.graph.peers[F.peer(5)] == nil)
        }
        // A late copy of 4's old report does not bring it back.
        let stale = PresenceReport(origin: F.peer(5), name: "p4", sequence: 1)
        #expect(!relay.trackers[0].ingest(stale))
    }

    @Test("the stream yields the graph, then each change as links go up and down")
    func stream() async throws {
        let tracker = try PresenceTracker(peer: F.peer(1), name: "a", firstSequence: 0)
        let updates = tracker.updates
        let other = tracker.updates
        try await within(.seconds(10), "presence updates") {
            var iterator = updates.makeAsyncIterator()
            let initial = await iterator.next()
            #expect(initial?.peers.count == 1 && initial?.links.isEmpty == true)

            tracker.linkUp(peer: F.peer(2), kind: .bluetooth)
            let up = await iterator.next()
            #expect(up?.links[.init(F.peer(1), F.peer(2), kind: .bluetooth)] == LinkQuality())
            #expect(up!.version > initial!.version)

            tracker.linkUp(peer: F.peer(2), kind: .bluetooth)  // no change, no update
            tracker.linkActive(peer: F.peer(2), kind: .bluetooth, true)
            let active = await iterator.next()
            #expect(active?.links[.init(F.peer(1), F.peer(2), kind: .bluetooth)]?.isActive == true)
            #expect(active!.version == up!.version + 1)

            tracker.linkDown(peer: F.peer(2), kind: .bluetooth)
            let down = await iterator.next()
            #expect(down?.links.isEmpty == true && down!.version > active!.version)

            // A second observer, slow to read, sees the newest graph, not every step.
            var second = other.makeAsyncIterator()
            let newest = await second.next()
            #expect(newest?.version == down?.version)
        }
    }
}
