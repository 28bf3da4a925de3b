import ArcusBluetooth
import ArcusMesh
import ArcusTransportConformance
import Foundation
import Testing

/// The link conformance checks on real L2CAP LE credit-based channels through the Linux kernel,
/// between two controllers: the virtual ones Tools/test-bluetooth.sh makes in a VM, named by
/// `ARCUS_BT_ADAPTERS=SERVER,CLIENT` (the server's controller advertising connectable). Without
/// it, this machine has no controllers to test on and the suite does not run (the VM pass sets it).
@Suite("Kernel L2CAP link conformance", .timeLimit(.minutes(5)),
       .enabled(if: KernelAdapters.named != nil, "needs ARCUS_BT_ADAPTERS=SERVER,CLIENT: run Tools/test-bluetooth.sh"))
struct KernelL2CAPLinkConformanceTests {
    static var adapters: (server: L2CAPAddress, client: L2CAPAddress)? { KernelAdapters.named }

    /// What a direction holds before `send` suspends: the sender's socket buffer and the
    /// receiver's (the kernel's defaults, about 208 KiB each, counted with overhead) and the
    /// credits in flight. Generous: the check is that a slow reader holds the writer back at all.
    static let bufferLimit = 1 << 20

    static let suites: [LinkConformance] = [
        LinkConformance(
            name: "kernel L2CAP LE CoC, MTU 247",
            makePair: {
                guard let adapters else { throw LinkError.closed }
                return try await L2CAPLinkPair.make(server: adapters.server, client: adapters.client)
            },
            sever: { link in link.close() },
            bufferLimit: bufferLimit
        )
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

    @Test("a fast producer is held back by a slow consumer and loses nothing", arguments: suites)
    func backpressure(_ links: LinkConformance) async throws {
        try await links.checkBackpressure()
    }

    @Test("the channel's MTU is the one asked for: 247 bytes each way")
    func negotiatedMTU() async throws {
        let adapters = try #require(Self.adapters)
        let (a, b) = try await L2CAPLinkPair.make(server: adapters.server, client: adapters.client)
        defer { a.close(); b.close() }
        #expect(a.mtu == 247 && b.mtu == 247, "send MTUs \(a.mtu) and \(b.mtu)")
    }
}

/// The two controllers `ARCUS_BT_ADAPTERS` names (server, client), if it does.
enum KernelAdapters {
    static let named: (server: L2CAPAddress, client: L2CAPAddress)? = {
        let names = (ProcessInfo.processInfo.environment["ARCUS_BT_ADAPTERS"] ?? "").split(separator: ",").map(String.init)
        guard names.count >= 2, let server = L2CAPAddress(names[0]), let client = L2CAPAddress(names[1]) else { return nil }
        return (server, client)
    }()
}
