import ArcusLoopback
import ArcusMesh
import ArcusTransportConformance
import Testing

/// The transport conformance checks, run for every transport in `transports`, and the link checks
/// on links they dial and accept. A new transport adds its own `TransportConformance` here (or
/// runs the same tests in its own target).
@Suite("Transport conformance", .timeLimit(.minutes(2)))
struct TransportConformanceTests {
    static let transports: [TransportConformance] = [
        .loopback(kind: .loopback, .instant),
        .loopback(kind: .bluetooth, .ble.accelerated(by: 10)),
        .loopback(kind: .lan, .lan),
    ]

    @Test("started transports discover each other", arguments: transports)
    func discovery(_ transport: TransportConformance) async throws {
        try await transport.checkDiscovery()
    }

    @Test("a peer out of reach is lost, its links end, and it comes back in reach", arguments: transports)
    func reachability(_ transport: TransportConformance) async throws {
        try await transport.checkReachabilityChanges()
    }

    @Test("a stopped transport is lost by its peers and its events finish", arguments: transports)
    func stopIsSeen(_ transport: TransportConformance) async throws {
        try await transport.checkStopIsSeenByPeers()
    }

    @Test("a dialled link is accepted by the peer and carries both ways", arguments: transports)
    func openIsAccepted(_ transport: TransportConformance) async throws {
        try await transport.checkOpenIsAccepted()
    }

    @Test("dialling an unknown, stopped or unreachable peer fails with a TransportError", arguments: transports)
    func unreachableDialsFail(_ transport: TransportConformance) async throws {
        try await transport.checkUnreachableDialsFail()
    }

    @Test("20 dials at once each reach the peer", arguments: transports)
    func manyDials(_ transport: TransportConformance) async throws {
        try await transport.checkManyDialsAtOnce(20)
    }

    @Test("stopping a transport closes its links on both ends", arguments: transports)
    func stopClosesLinks(_ transport: TransportConformance) async throws {
        try await transport.checkStopClosesLinks()
    }

    // MARK: Its links

    @Test("dialled links: mtu - 1 and mtu go through, mtu + 1 is refused", arguments: transports)
    func linksAroundTheMTU(_ transport: TransportConformance) async throws {
        try await transport.links.checkMessagesAroundTheMTU()
    }

    @Test("dialled links deliver in order both ways", arguments: transports)
    func linksDeliverInOrder(_ transport: TransportConformance) async throws {
        try await transport.links.checkDeliversInOrderBothWays()
    }

    @Test("dialled links close from either end", arguments: transports)
    func linksClose(_ transport: TransportConformance) async throws {
        try await transport.links.checkCloseFromEitherEnd()
    }

    @Test("dialled links survive a peer vanishing mid-stream with an intact prefix", arguments: transports)
    func linksPeerVanishing(_ transport: TransportConformance) async throws {
        try await transport.links.checkPeerVanishingMidStream()
    }

    @Test("dialled links hold back a fast producer", arguments: transports)
    func linksBackpressure(_ transport: TransportConformance) async throws {
        try await transport.links.checkBackpressure()
    }
}

extension TransportConformance {
    /// Loopback transports on one fresh `LoopbackNetwork`, named `peer-0`, `peer-1`, ….
    static func loopback(kind: LinkKind, _ conditions: LoopbackConditions) -> TransportConformance {
        TransportConformance(
            name: "loopback transport as \(kind.rawValue) (\(conditions))",
            makeTransports: { count in
                let network = LoopbackNetwork(kind: kind, conditions: conditions)
                let transports = (0..<count).map { index in
                    LoopbackTransport(name: "peer-\(index)", peer: PeerID(bytes: [UInt8](repeating: UInt8(index), count: PeerID.size)), on: network)
                }
                return TransportFixture(transports: transports) { a, b, inRange in
                    network.setInRange("peer-\(a)", "peer-\(b)", inRange)
                }
            },
            sever: { link in loopbackLink(under: link).drop() },
            bufferLimit: conditions.queueLimitBytes,
            unknownAddress: "nobody"
        )
    }
}
