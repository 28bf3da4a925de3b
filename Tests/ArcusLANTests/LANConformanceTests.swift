import ArcusLAN
import ArcusMesh
import ArcusTransportConformance
import Testing

/// The transport conformance checks on `LANTransport` over 127.0.0.1, peers found through an
/// in-process directory; TCP cannot be put out of reach from a test, so there is no reach check.
@Suite("LAN transport conformance", .timeLimit(.minutes(2)))
struct LANTransportConformanceTests {
    static let lan = TransportConformance(
        name: "LAN transport on 127.0.0.1",
        makeTransports: { count in
            let directory = LANDirectory()
            let transports = (0..<count).map { index in
                LANTransport(listeningOn: .loopback, peer: .numbered(index), discovery: [directory], pendingHandshakes: .generous())
            }
            return TransportFixture(transports: transports)
        },
        sever: { link in link.close() },
        bufferLimit: LANLinkLimits().bufferLimit,
        unknownAddress: "127.0.0.1:1"
    )

    @Test("started transports discover each other")
    func discovery() async throws {
        try await Self.lan.checkDiscovery()
    }

    @Test("a stopped transport is lost by its peers and its events finish")
    func stopIsSeen() async throws {
        try await Self.lan.checkStopIsSeenByPeers()
    }

    @Test("a dialled link is accepted by the peer and carries both ways")
    func openIsAccepted() async throws {
        try await Self.lan.checkOpenIsAccepted()
    }

    @Test("dialling an unknown or stopped peer fails with a TransportError")
    func unreachableDialsFail() async throws {
        try await Self.lan.checkUnreachableDialsFail()
    }

    @Test("100 dials at once each reach the peer")
    func manyDials() async throws {
        try await Self.lan.checkManyDialsAtOnce(100)
    }

    @Test("stopping a transport closes its links on both ends")
    func stopClosesLinks() async throws {
        try await Self.lan.checkStopClosesLinks()
    }
}

/// The link conformance checks on links a `LANTransport` dials and accepts.
@Suite("LAN link conformance", .timeLimit(.minutes(2)))
struct LANLinkConformanceTests {
    /// Each pair is dialled to a listener of its own, so that pairs made at once cannot be
    /// mistaken for each other; the dialler is shared.
    static let links = LinkConformance(
        name: "LAN links on 127.0.0.1",
        makePair: {
            let dialler = try await Dialler.shared.transport()
            let listener = LANTransport(listeningOn: .loopback)
            let log = TransportEventLog(listener.events)
            try await listener.start()
            let opened = try await within(.seconds(45), "dialling") { try await dialler.open(to: listener.localEndpoint) }
            return (opened, try await log.accepted(from: dialler.localEndpoint))
        },
        sever: { link in link.close() },
        bufferLimit: LANLinkLimits().bufferLimit
    )

    @Test("messages of every size up to the MTU arrive whole and in order, both ways at once")
    func deliversInOrder() async throws {
        try await Self.links.checkDeliversInOrderBothWays()
    }

    @Test("mtu - 1 and mtu bytes go through; mtu + 1 is refused and the link carries on")
    func messagesAroundTheMTU() async throws {
        try await Self.links.checkMessagesAroundTheMTU()
    }

    @Test("closing either end finishes both streams and fails later sends")
    func closeFromEitherEnd() async throws {
        try await Self.links.checkCloseFromEitherEnd()
    }

    @Test("a send suspended on a full link fails when the peer closes")
    func closeFailsSuspendedSends() async throws {
        try await Self.links.checkCloseFailsSuspendedSends()
    }

    @Test("a peer vanishing mid-stream fails pending sends and leaves an intact prefix")
    func peerVanishing() async throws {
        try await Self.links.checkPeerVanishingMidStream()
    }

    @Test("a fast producer is held back by a slow consumer and loses nothing")
    func backpressure() async throws {
        try await Self.links.checkBackpressure()
    }

    @Test("100 pairs work at once")
    func manyLinks() async throws {
        try await Self.links.checkManyLinksAtOnce(pairs: 100)
    }
}

/// One started transport that the link checks dial from.
actor Dialler {
    static let shared = Dialler()
    private var starting: Task<LANTransport, any Error>?

    /// The same transport for every caller, started once.
    func transport() async throws -> LANTransport {
        if let starting { return try await starting.value }
        let task = Task {
            let transport = LANTransport(listeningOn: .loopback)
            try await transport.start()
            return transport
        }
        starting = task
        return try await task.value
    }
}

extension LANAddress {
    /// 127.0.0.1, a port the system chooses: the only address tests listen on.
    static let loopback = LANAddress(host: "127.0.0.1", port: 0)
}

extension PeerID {
    static func numbered(_ index: Int) -> PeerID {
        PeerID(bytes: [UInt8](repeating: UInt8(index), count: PeerID.size))!
    }
}
