import ArcusBluetooth
import ArcusMesh
import ArcusTransportConformance
import Testing

/// The link conformance checks on emulated L2CAP channels (socketpair SOCK_SEQPACKET pairs),
/// unpaced and paced as a PHY fast enough that the checks stay quick.
@Suite("Emulated Bluetooth link conformance", .timeLimit(.minutes(2)))
struct EmulatedLinkConformanceTests {
    static let fastPHY = EmulatedPHY(bitsPerSecond: 200_000_000, connectionInterval: .milliseconds(1))

    static let suites = [
        LinkConformance(
            name: "emulated L2CAP pairs, unpaced",
            makePair: { try EmulatedLinkPair.make() },
            sever: { link in link.close() },
            bufferLimit: EmulatedLinkPair.bufferLimit()
        ),
        LinkConformance(
            name: "emulated L2CAP pairs, paced at 200 Mbit/s",
            makePair: { try EmulatedLinkPair.make(phy: fastPHY) },
            sever: { link in link.close() },
            bufferLimit: EmulatedLinkPair.bufferLimit(phy: fastPHY)
        ),
    ]

    @Test("messages of every size up to the MTU arrive whole and in order, both ways at once", arguments: suites)
    func deliversInOrder(_ links: LinkConformance) async throws {
        try await links.checkDeliversInOrderBothWays()
    }

    @Test("mtu - 1 and mtu bytes go through; mtu + 1 is refused and the link carries on", arguments: suites)
    func messagesAroundTheMTU(_ links: LinkConformance) async throws {
        try await links.checkMessagesAroundTheMTU()
    }

    @Test("closing either end finishes both streams and fails later sends", arguments: suites)
    func closeFromEitherEnd(_ links: LinkConformance) async throws {
        try await links.checkCloseFromEitherEnd()
    }

    @Test("a send suspended on a full link fails when the peer closes", arguments: suites)
    func closeFailsSuspendedSends(_ links: LinkConformance) async throws {
        try await links.checkCloseFailsSuspendedSends()
    }

    @Test("a peer vanishing mid-stream fails pending sends and leaves an intact prefix", arguments: suites)
    func peerVanishing(_ links: LinkConformance) async throws {
        try await links.checkPeerVanishingMidStream()
    }

    @Test("a fast producer is held back by a slow consumer and loses nothing", arguments: suites)
    func backpressure(_ links: LinkConformance) async throws {
        try await links.checkBackpressure()
    }

    @Test("100 pairs work at once", arguments: suites)
    func manyLinks(_ links: LinkConformance) async throws {
        try await links.checkManyLinksAtOnce(pairs: 100)
    }
}
