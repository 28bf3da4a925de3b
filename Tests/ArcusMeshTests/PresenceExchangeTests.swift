import ArcusLoopback
import Testing
@testable import ArcusMesh

/// Presence wired into the multiplexer: reports travel between peers over their sessions, each
/// peer's graph learns the mesh, a cut link leaves it, and bad reports never bring a peer down.
@Suite("Presence exchange", .serialized, .timeLimit(.minutes(1)))
struct PresenceExchangeTests {
    /// Peers `1…n` (ids ordered by index), each a multiplexer with its own tracker, and the
    /// loopback links between them.
    struct Peers {
        let ids: [PeerID]
        let multiplexers: [Multiplexer]
        var trackers: [PresenceTracker] { multiplexers.map { $0.presenceTracker! } }

        init(count: Int) throws {
            ids = (1...count).map { PresenceFixtures.peer(UInt8($0)) }
            multiplexers = try ids.enumerated().map { index, id in
                Multiplexer(
                    localPeer: id, configuration: SessionTestPeers.quickConfiguration,
                    presence: try PresenceTracker(peer: id, name: "peer-\(index)")
                )
            }
        }

        /// A LAN link that peer `a` dials and peer `b` accepts; returns `a`'s end.
        @discardableResult
        func link(_ a: Int, _ b: Int) async throws -> LoopbackLink {
            let (ends, other) = Loopback.pair(.instant, name: "\(a)-\(b)", kind: .lan)
            async let dialled = multiplexers[a].add(ends, as: .dialer)
            async let accepted = multiplexers[b].add(other, as: .acceptor)
            _ = try await (dialled, accepted)
            return ends
        }

        /// Whether every peer's graph names every peer and routes to each in `hops(i, j)` hops.
        func everyoneSeesEveryone(hops: (Int, Int) -> Int) -> Bool {
            trackers.enumerated().allSatisfy { i, tracker in
                let graph = tracker.graph
                return ids.enumerated().allSatisfy { j, id in
                    i == j || (graph.peers[id]?.name == "peer-\(j)" && graph.route(from: ids[i], to: id)?.hops == hops(i, j))
                }
            }
        }

        func close() async {
            for multiplexer in multiplexers { await multiplexer.close() }
        }
    }

    @Test("in a chain of four, peer 0 learns every peer and reaches peer 3 through peer 1 in 3 hops")
    func chainRoutes() async throws {
        let peers = try Peers(count: 4)
        for index in 0..<3 { try await peers.link(index, index + 1) }
        let first = peers.trackers[0]
        // Peer 2's report may bring the link to peer 3 before peer 3's own report names it.
        try await eventually("peer 0 hears from peer 3 and routes to it") {
            let graph = first.graph
            return graph.peers[peers.ids[3]]?.name != nil && graph.route(from: peers.ids[0], to: peers.ids[3]) != nil
        }

        let graph = first.graph
        #expect(Set(graph.peers.keys) == Set(peers.ids))
        #expect(graph.peers[peers.ids[3]]?.name == "peer-3")
        #expect(graph.route(from: peers.ids[0], to: peers.ids[3]) == .init(destination: peers.ids[3], nextHop: peers.ids[1], hops: 3))
        #expect(graph.route(from: peers.ids[0], to: peers.ids[2])?.hops == 2)
        // The far end learns the near end too: reports flow both ways.
        try await eventually("everyone sees everyone") { peers.everyoneSeesEveryone { abs($0 - $1) } }
        await peers.close()
    }

    @Test("around a ring a report is forwarded at most once by each peer, and copies stop")
    func ringDoesNotLoop() async throws {
        let peers = try Peers(count: 4)
        for index in 0..<4 { try await peers.link(index, (index + 1) % 4) }
        try await eventually("everyone sees everyone") { peers.everyoneSeesEveryone { min(abs($0 - $1), 4 - abs($0 - $1)) } }

        // Read what was received before what was made, so that every report counted as received
        // is among those counted as made.
        var traffic: [PresenceTraffic] = []
        for multiplexer in peers.multiplexers { traffic.append(await multiplexer.presenceTraffic) }
        var made: [Int] = []
        for multiplexer in peers.multiplexers { made.append(await multiplexer.presenceTraffic.reportsMade) }
        let links = 4
        for (index, figures) in traffic.enumerated() {
            let othersMade = made.enumerated().filter { $0.offset != index }.map(\.element).reduce(0, +)
            #expect(figures.reportsForwarded <= othersMade, "peer \(index) forwarded \(figures.reportsForwarded) of \(othersMade) reports")
            #expect(figures.reportsRefused == 0)
        }
        // Each report crosses each link at most once each way, plus what was handed to a new
        // neighbour; a loop would keep going past any bound.
        let received = traffic.map(\.reportsReceived).reduce(0, +)
        let handedOn = traffic.map(\.reportsHandedOn).reduce(0, +)
        #expect(received <= 2 * links * made.reduce(0, +) + handedOn)
        // Opposite corners hear each report twice: the second copy was stopped, not forwarded.
        #expect(received > traffic.map(\.reportsForwarded).reduce(0, +))
        await peers.close()
    }

    @Test("cutting the middle link of a chain leaves peers 2 and 3 unreachable in peer 0's graph")
    func cutChain() async throws {
        let peers = try Peers(count: 4)
        try await peers.link(0, 1)
        let middle = try await peers.link(1, 2)
        try await peers.link(2, 3)
        try await eventually("everyone sees everyone") { peers.everyoneSeesEveryone { abs($0 - $1) } }

        middle.close()
        let first = peers.trackers[0]
        try await eventually("peer 0 no longer reaches peer 2") { first.graph.route(from: peers.ids[0], to: peers.ids[2]) == nil }
        let graph = first.graph
        #expect(graph.route(from: peers.ids[0], to: peers.ids[3]) == nil)
        #expect(graph.links(between: peers.ids[1], peers.ids[2]).isEmpty)
        #expect(graph.route(from: peers.ids[0], to: peers.ids[1])?.hops == 1)
        // And the far side sees the same from its end.
        let last = peers.trackers[3]
        try await eventually("peer 3 no longer reaches peer 0") { last.graph.route(from: peers.ids[3], to: peers.ids[0]) == nil }
        #expect(last.graph.route(from: peers.ids[3], to: peers.ids[2])?.hops == 1)
        await peers.close()
    }

    @Test("a peer that joins learns the mesh from its new neighbour at once, not at the next refresh")
    func joinerLearnsFromNeighbour() async throws {
        let peers = try Peers(count: 4)
        try await peers.link(0, 1)
        try await peers.link(1, 2)
        let three = Array(peers.trackers.prefix(3))
        try await eventually("the first three see each other") {
            three.allSatisfy { tracker in (0..<3).allSatisfy { tracker.graph.peers[peers.ids[$0]]?.name == "peer-\($0)" } }
        }
        // Peer 0's links do not change when peer 3 joins, so it makes no new report until its
        // refresh, 9 s or more away: peer 3 can only learn of it from what peer 2 hands on.
        let madeByPeer0 = await peers.multiplexers[0].presenceTraffic.reportsMade
        try await peers.link(2, 3)
        let joiner = peers.trackers[3]
        // Peer 0's report, handed on by peer 2, can be in before what completes the route to it
        // (peer 2's report, or peer 3's own record of its new link; see `PresenceGraph(reports:)`):
        // in CI on 2026-11-30 the name was there and the route not yet.
        try await eventually("peer 3 hears of peer 0 and routes to it through peers 2 and 1") {
            joiner.graph.peers[peers.ids[0]]?.name == "peer-0" && joiner.graph.route(from: peers.ids[3], to: peers.ids[0])?.hops == 3
        }
        #expect(await peers.multiplexers[0].presenceTraffic.reportsMade == madeByPeer0, "peer 0 refreshed: the test proves nothing")
        #expect(await peers.multiplexers[2].presenceTraffic.reportsHandedOn >= 2)
        await peers.close()
    }

    // MARK: Bad input

    /// Bravo, with a tracker, accepts a link whose other end the test drives by hand as mallory.
    private static func handDriven() async throws -> (bravo: Multiplexer, channel: MessageChannel, session: PeerSession) {
        var configuration = SessionConfiguration()
        configuration.heartbeatInterval = .seconds(60)
        let bravo = Multiplexer(localPeer: .bravo, configuration: configuration, presence: try PresenceTracker(peer: .bravo, name: "bravo"))
        let (ours, theirs) = Loopback.pair(.instant, name: "hand-driven")
        let channel = MessageChannel(ours, maximumMessageSize: configuration.maximumMessageSize + SessionFrame.dataOverhead)
        let admission = Task { try await bravo.add(theirs, as: .acceptor) }
        let hello = LinkHello(peer: .mallory, incarnation: 7, role: .dialer, dialID: 1, receiveWindow: 64)
        try await channel.send(SessionFrame.hello(hello).encoded())
        let session = try await admission.value
        try await eventually("the link is bound") { await session.linkStatuses.count == 1 }
        return (bravo, channel, session)
    }

    @Test("a presence frame longer than any valid report closes that link, with the reason")
    func oversizedFrame() async throws {
        let (bravo, channel, session) = try await Self.handDriven()
        let size = PresenceReport.Limits.encodedBytes + 1
        try await channel.send([0x06] + [UInt8](repeating: 0, count: size))
        var removal: LinkRemoval?
        for await event in session.events {
            if case .linkRemoved(_, let reason) = event { removal = reason; break }
        }
        #expect(removal == .peerViolation(.presenceTooLarge(size: size, limit: PresenceReport.Limits.encodedBytes)))
        #expect(await bravo.presenceTraffic.reportsReceived == 0)
        await bravo.close()
    }

    @Test("a malformed report is refused and reported; the link stays and the next good report counts")
    func malformedReport() async throws {
        let (bravo, channel, session) = try await Self.handDriven()
        try await channel.send(SessionFrame.presence([0x01, 0x02, 0x03]).encoded())
        var events = bravo.events.makeAsyncIterator()
        var refusal: String?
        while let event = await events.next() {
            if case .presenceRefused(let from, let reason) = event {
                #expect(from == .mallory)
                refusal = reason
                break
            }
        }
        #expect(refusal != nil)
        #expect(await bravo.presenceTraffic.reportsRefused == 1)

        let report = PresenceReport(origin: .mallory, name: "mallory", sequence: 1, links: [.init(peer: .bravo, kind: .lan)])
        try await channel.send(SessionFrame.presence(report.encoded()).encoded())
        let tracker = bravo.presenceTracker!
        try await eventually("bravo's graph names mallory") { tracker.graph.peers[.mallory]?.name == "mallory" }
        #expect(await session.linkStatuses.count == 1)
        await bravo.close()
    }

    @Test("the frame bound is exactly the longest report within the limits, which still decodes")
    func frameBound() throws {
        let origin = PresenceFixtures.peer(0xFF)
        let name = String(repeating: "n", count: PresenceReport.Limits.nameBytes)
        var metadata: [String: String] = [:]
        for index in 0..<PresenceReport.Limits.metadataEntries {
            let key = "\(index)" + String(repeating: "k", count: PresenceReport.Limits.metadataKeyBytes - 1)
            metadata[key] = String(repeating: "v", count: PresenceReport.Limits.metadataValueBytes)
        }
        let links = (0..<PresenceReport.Limits.links).map { index in
            PresenceReport.Neighbour(
                peer: PeerID(bytes: [UInt8(index + 1)] + [UInt8](repeating: 0, count: PeerID.size - 1))!, kind: .lan,
                quality: LinkQuality(rttMilliseconds: .max, throughput: .max, isActive: true)
            )
        }
        let report = PresenceReport(origin: origin, name: name, sequence: .max, metadata: metadata, links: links)
        try report.validate()
        let bytes = report.encoded()
        #expect(bytes.count == PresenceReport.Limits.encodedBytes)
        #expect(try SessionFrame(decoding: SessionFrame.presence(bytes).encoded()) == .presence(bytes))
        #expect(try PresenceReport(decoding: bytes) == report)
    }
}
