import ArcusBluetooth
import ArcusMesh
import ArcusTransportConformance
import Foundation
import Testing

/// The link conformance checks on Bluetooth channels: emulated ones (socketpair SOCK_SEQPACKET
/// pairs), unpaced and paced as a PHY fast enough that the checks stay quick; and, where
/// `ARCUS_BT_ADAPTERS=SERVER,CLIENT` names two controllers (the virtual ones Tools/test-bluetooth.sh
/// makes in a VM, the server's advertising connectable), real L2CAP LE credit-based channels
/// through the Linux kernel between them, opened as the transport opens its own.
@Suite("Bluetooth link conformance", .timeLimit(.minutes(5)))
struct BluetoothLinkConformanceTests {
    static let fastPHY = EmulatedPHY(bitsPerSecond: 200_000_000, connectionInterval: .milliseconds(1))

    /// How long a step may take before the check calls the link stalled. Tools/test-bluetooth.sh
    /// runs these checks in a VM under TCG, several times slower than the host: there, the paced
    /// pair's backpressure check took over 45 s to receive its 1,136 messages once in CI. The
    /// bound only tells a stalled link from a slow one.
    static let stepLimit: Duration = .seconds(150)

    static let suites = [
        LinkConformance(
            name: "emulated L2CAP pairs, unpaced",
            makePair: { try EmulatedLinkPair.make() },
            sever: { link in link.close() },
            bufferLimit: EmulatedLinkPair.bufferLimit(),
            stepLimit: stepLimit
        ),
        LinkConformance(
            name: "emulated L2CAP pairs, paced at 200 Mbit/s",
            makePair: { try EmulatedLinkPair.make(phy: fastPHY) },
            sever: { link in link.close() },
            bufferLimit: EmulatedLinkPair.bufferLimit(phy: fastPHY),
            stepLimit: stepLimit
        ),
    ] + (KernelAdapters.named.map { [kernel($0.server, $0.client)] } ?? [])

    /// What a direction of a kernel channel holds before `send` suspends: the sender's socket
    /// buffer and the receiver's (the kernel's defaults, about 208 KiB each, counted with
    /// overhead) and the credits in flight. Generous: the check is that a slow reader holds the
    /// writer back at all.
    static func kernel(_ server: L2CAPAddress, _ client: L2CAPAddress) -> LinkConformance {
        LinkConformance(
            name: "kernel L2CAP LE CoC, MTU 247",
            makePair: { try await L2CAPLinkPair.make(server: server, client: client) },
            sever: { link in link.close() },
            bufferLimit: 1 << 20,
            // Under TCG a channel moves ~400 KB/s at best, less on a loaded host.
            stepLimit: stepLimit,
            // LE dynamic channel ids run 0x0040-0x007F: 64 channels on one connection. 60 set up
            // at once stalled in the VM (every connect blocked; not yet understood); 16 do not.
            simultaneousPairs: 16
        )
    }

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

    @Test("100 pairs work at once (as many as the carrier holds)", arguments: suites)
    func manyLinks(_ links: LinkConformance) async throws {
        try await links.checkManyLinksAtOnce(pairs: 100)
    }

    @Test("a kernel channel's MTU is the one asked for: 247 bytes each way",
          .enabled(if: KernelAdapters.named != nil, "needs ARCUS_BT_ADAPTERS=SERVER,CLIENT: run Tools/test-bluetooth.sh"))
    func negotiatedMTU() async throws {
        let adapters = try #require(KernelAdapters.named)
        let (a, b) = try await L2CAPLinkPair.make(server: adapters.server, client: adapters.client)
        defer { a.close(); b.close() }
        #expect(a.mtu == 247 && b.mtu == 247, "send MTUs \(a.mtu) and \(b.mtu)")
    }
}

/// The controllers the VM pass names in `ARCUS_BT_ADAPTERS` (addresses, comma-separated).
enum KernelAdapters {
    static let all: [L2CAPAddress] = (ProcessInfo.processInfo.environment["ARCUS_BT_ADAPTERS"] ?? "").split(separator: ",").compactMap {
        L2CAPAddress(String($0))
    }

    /// The first two, a server and a client; nil unless there are at least two.
    static let named: (server: L2CAPAddress, client: L2CAPAddress)? = all.count >= 2 ? (all[0], all[1]) : nil
}
