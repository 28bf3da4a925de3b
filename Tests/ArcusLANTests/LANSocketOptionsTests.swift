#if canImport(Glibc)
import Glibc
#endif
@testable import ArcusLAN
import ArcusMesh
import ArcusTransportConformance
import NIOCore
import Testing

/// What the sockets under both ends of a link are set to: small messages go out at once, and a
/// peer that vanished without closing is noticed by keepalive probes.
@Suite("LAN socket options", .timeLimit(.minutes(2)))
struct LANSocketOptionsTests {
    @Test("both ends of a link have TCP_NODELAY and keepalive probes as the limits say")
    func bothEndsAreTuned() async throws {
        var limits = LANLinkLimits()
        limits.keepaliveIdle = .seconds(21)
        limits.keepaliveInterval = .seconds(4)
        limits.keepaliveProbes = 6
        let listener = LANTransport(listeningOn: .loopback, limits: limits)
        let dialler = LANTransport(listeningOn: .loopback, limits: limits)
        let log = TransportEventLog(listener.events)
        try await listener.start()
        try await dialler.start()
        let opened = try #require(try await dialler.open(to: listener.localEndpoint) as? LANLink)
        let accepted = try #require(try await log.accepted(from: dialler.localEndpoint) as? LANLink)

        for link in [opened, accepted] {
            let channel = link.channel
            #expect(try await channel.getOption(.tcpOption(.tcp_nodelay)).get() != 0, "\(link)")
            #expect(try await channel.getOption(.socketOption(.so_keepalive)).get() != 0, "\(link)")
            #expect(try await channel.getOption(.tcpOption(.init(rawValue: TCP_KEEPIDLE))).get() == 21, "\(link)")
            #expect(try await channel.getOption(.tcpOption(.init(rawValue: TCP_KEEPINTVL))).get() == 4, "\(link)")
            #expect(try await channel.getOption(.tcpOption(.init(rawValue: TCP_KEEPCNT))).get() == 6, "\(link)")
        }
        await dialler.stop()
        await listener.stop()
    }
}
