import ArcusBluetooth
import ArcusMesh
import ArcusTransportConformance
import Foundation
import Testing

/// The transport conformance checks on `BluetoothTransport` over the Linux kernel's stack: each
/// transport on a controller of its own (the virtual ones Tools/test-bluetooth.sh makes in a VM,
/// named in `ARCUS_BT_ADAPTERS`), advertising and discovering through the management socket,
/// its links L2CAP LE credit-based channels. The same checks the emulated radio passes, but
/// reach cannot be changed (every virtual controller hears every other), and the many-dials
/// check opens 16 at once rather than 100 (`BluetoothLinkConformanceTests` says why).
@Suite(
    "Bluetooth transport conformance on the kernel's stack", .serialized, .timeLimit(.minutes(10)),
    .enabled(if: KernelAdapters.all.count >= 3, "needs three controllers in ARCUS_BT_ADAPTERS: run Tools/test-bluetooth.sh")
)
struct KernelTransportConformanceTests {
    static let kernel = TransportConformance(
        name: "Bluetooth transport on the kernel's L2CAP",
        makeTransports: { count in
            let transports = KernelAdapters.all.prefix(count).map { address in
                BluetoothTransport(
                    radio: .l2cap(L2CAPRadioSettings(adapter: BluetoothAdapter(address.text))), peer: PeerID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255) })!,
                    meshHash: "c0ffee0123456789", pendingHandshakes: .generous()
                )
            }
            return TransportFixture(transports: transports)
        },
        sever: { link in link.close() },
        bufferLimit: 1 << 20,
        // A controller address no virtual controller has, at a dynamic PSM.
        unknownAddress: "00:AA:01:09:00:09/public/0x81",
        // Under TCG; and a stopped peer is lost only once its adverts have not been heard for
        // 30 s (`BlueZDiscovery.lostAfter`).
        stepLimit: .seconds(120)
    )

    @Test("started transports discover each other, at the endpoints they listen on")
    func discovery() async throws {
        try await Self.kernel.checkDiscovery()
    }

    @Test("a stopped transport is lost by its peers and its events finish")
    func stopIsSeen() async throws {
        try await Self.kernel.checkStopIsSeenByPeers()
    }

    @Test("a dialled link is accepted by the peer, from the dialler's endpoint, and carries both ways")
    func openIsAccepted() async throws {
        try await Self.kernel.checkOpenIsAccepted()
    }

    @Test("dialling an unknown or stopped peer, or from a transport not running, fails at once with a TransportError")
    func unreachableDialsFail() async throws {
        try await Self.kernel.checkUnreachableDialsFail()
    }

    @Test("16 dials at once each reach the peer")
    func manyDials() async throws {
        try await Self.kernel.checkManyDialsAtOnce(16)
    }

    @Test("stopping a transport closes its links on both ends")
    func stopClosesLinks() async throws {
        try await Self.kernel.checkStopClosesLinks()
    }

    @Test("links the transport dials and accepts pass the link checks")
    func links() async throws {
        let links = Self.kernel.links
        try await links.checkDeliversInOrderBothWays()
        try await links.checkMessagesAroundTheMTU()
        try await links.checkCloseFromEitherEnd()
    }
}
