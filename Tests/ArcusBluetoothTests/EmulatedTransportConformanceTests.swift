import ArcusBluetooth
import ArcusMesh
import ArcusTransportConformance
import Testing

/// The transport conformance checks on `BluetoothTransport` over the emulated radio, each test
/// in a directory of its own under /tmp; reach is changed through topology.json.
@Suite("Emulated Bluetooth transport conformance", .timeLimit(.minutes(2)))
struct EmulatedTransportConformanceTests {
    static let emulated = TransportConformance(
        name: "Bluetooth transport on the emulated radio",
        makeTransports: { count in
            let fixture = try EmulatedRadioFixture(count: count)
            return TransportFixture(transports: fixture.transports, setReachable: { a, b, reachable in
                try? fixture.setReachable(a, b, reachable)
            })
        },
        sever: { link in link.close() },
        bufferLimit: EmulatedLinkPair.bufferLimit(),
        // A well-formed peer id that no test transport uses.
        unknownAddress: String(repeating: "ee", count: PeerID.size)
    )

    @Test("started transports discover each other")
    func discovery() async throws {
        try await Self.emulated.checkDiscovery()
    }

    @Test("peers moved out of range are lost, their links end, and they return")
    func reachability() async throws {
        try await Self.emulated.checkReachabilityChanges()
    }

    @Test("a stopped transport is lost by its peers and its events finish")
    func stopIsSeen() async throws {
        try await Self.emulated.checkStopIsSeenByPeers()
    }

    @Test("a dialled link is accepted by the peer and carries both ways")
    func openIsAccepted() async throws {
        try await Self.emulated.checkOpenIsAccepted()
    }

    @Test("dialling an unknown, stopped or out-of-range peer fails with a TransportError")
    func unreachableDialsFail() async throws {
        try await Self.emulated.checkUnreachableDialsFail()
    }

    @Test("100 dials at once each reach the peer")
    func manyDials() async throws {
        try await Self.emulated.checkManyDialsAtOnce(100)
    }

    @Test("stopping a transport closes its links on both ends")
    func stopClosesLinks() async throws {
        try await Self.emulated.checkStopClosesLinks()
    }

    @Test("links the transport dials and accepts pass the link checks")
    func links() async throws {
        let links = Self.emulated.links
        try await links.checkDeliversInOrderBothWays()
        try await links.checkMessagesAroundTheMTU()
        try await links.checkCloseFromEitherEnd()
        try await links.checkBackpressure()
    }
}
