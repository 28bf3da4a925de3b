import ArcusLoopback
import ArcusMesh
import ArcusTransportConformance
import Testing

/// The conformance checks, run for every transport in `transports`. A new transport adds its
/// own `LinkConformance` here (or runs the same tests in its own target).
@Suite("Link conformance", .timeLimit(.minutes(2)))
struct LinkConformanceTests {
    static let transports: [LinkConformance] = [
        .loopback(.instant),
        .loopback(.ble.accelerated(by: 10)),
        .loopback(.lan),
        .messageChannel(maximumMessageSize: 4096, over: .ble.accelerated(by: 20)),
        .secure(over: .instant),
        .secure(over: .ble.accelerated(by: 10)),
    ]

    @Test("messages of every size up to the MTU arrive whole and in order, both ways at once", arguments: transports)
    func deliversInOrder(_ transport: LinkConformance) async throws {
        try await transport.checkDeliversInOrderBothWays()
    }

    @Test("mtu - 1 and mtu bytes go through; mtu + 1 is refused and the link carries on", arguments: transports)
    func messagesAroundTheMTU(_ transport: LinkConformance) async throws {
        try await transport.checkMessagesAroundTheMTU()
    }

    @Test("closing either end finishes both streams and fails later sends", arguments: transports)
    func closeFromEitherEnd(_ transport: LinkConformance) async throws {
        try await transport.checkCloseFromEitherEnd()
    }

    @Test("a send suspended on a full link fails when the peer closes", arguments: transports)
    func closeFailsSuspendedSends(_ transport: LinkConformance) async throws {
        try await transport.checkCloseFailsSuspendedSends()
    }

    @Test("a peer vanishing mid-stream fails pending sends and leaves an intact prefix", arguments: transports)
    func peerVanishing(_ transport: LinkConformance) async throws {
        try await transport.checkPeerVanishingMidStream()
    }

    @Test("a fast producer is held back by a slow consumer and loses nothing", arguments: transports)
    func backpressure(_ transport: LinkConformance) async throws {
        try await transport.checkBackpressure()
    }

    @Test("200 pairs work at once", arguments: transports)
    func manyLinks(_ transport: LinkConformance) async throws {
        try await transport.checkManyLinksAtOnce(pairs: 200)
    }
}

extension LinkConformance {
    static func loopback(_ conditions: LoopbackConditions) -> LinkConformance {
        LinkConformance(
            name: "loopback (\(conditions))",
            makePair: { Loopback.pair(conditions, name: "conformance") },
            sever: { link in loopbackLink(under: link).drop() },
            bufferLimit: conditions.queueLimitBytes
        )
    }

    /// Message channels over a loopback pair: a channel is a link too, and must keep its contract
    /// across fragmentation.
    static func messageChannel(maximumMessageSize: Int, over conditions: LoopbackConditions) -> LinkConformance {
        LinkConformance(
            name: "message channel of up to \(maximumMessageSize) bytes over loopback (\(conditions))",
            makePair: {
                let (a, b) = Loopback.pair(conditions, name: "conformance")
                return (MessageChannel(a, maximumMessageSize: maximumMessageSize), MessageChannel(b, maximumMessageSize: maximumMessageSize))
            },
            sever: { link in loopbackLink(under: link).drop() },
            bufferLimit: conditions.queueLimitBytes
        )
    }

    /// Secure links over a loopback pair, after a shared-secret handshake: sealing must keep
    /// every part of the contract, the MTU less the tag.
    static func secure(over conditions: LoopbackConditions) -> LinkConformance {
        LinkConformance(
            name: "secure link over loopback (\(conditions))",
            makePair: {
                let (a, b) = try await SecurityFixtures.securePair(conditions)
                return (a, b)
            },
            sever: { link in loopbackLink(under: link).drop() },
            bufferLimit: conditions.queueLimitBytes
        )
    }
}

/// The loopback link that carries `link`, through any message channels or secure links around it.
func loopbackLink(under link: any Link) -> LoopbackLink {
    if let loopback = link as? LoopbackLink { return loopback }
    if let channel = link as? MessageChannel { return loopbackLink(under: channel.link) }
    if let secure = link as? SecureLink { return loopbackLink(under: secure.link) }
    preconditionFailure("\(link.description) is not carried by a loopback link")
}
