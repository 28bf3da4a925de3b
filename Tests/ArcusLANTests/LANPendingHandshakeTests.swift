@testable import ArcusLAN
import ArcusMesh
import ArcusTransportConformance
import NIOCore
import Synchronization
import Testing

/// Connections that say nothing (or half a hello) hold a pending-handshake slot each, by remote
/// address; past the caps a connection is closed as it is accepted. Real sockets on 127.0.0.x.
@Suite("LAN transport: the cap on pending handshakes", .timeLimit(.minutes(2)))
struct LANPendingHandshakeTests {
    static let step: Duration = .seconds(45)

    /// A transport whose gate holds `total` links, `perSource` per address, for 10 minutes (so
    /// that only the caps, never the deadline, decide within the test).
    static func listening(total: Int, perSource: Int) async throws -> (LANTransport, TransportEventLog, PendingHandshakes, Refusals) {
        var limits = PendingHandshakes.Limits()
        limits.total = total
        limits.perSource = perSource
        limits.lanDeadline = .seconds(600)
        let refusals = Refusals()
        let gate = PendingHandshakes(limits: limits, observe: refusals.record)
        let transport = LANTransport(listeningOn: .loopback, pendingHandshakes: gate)
        let log = TransportEventLog(transport.events)
        try await transport.start()
        return (transport, log, gate, refusals)
    }

    final class Refusals: Sendable {
        private let events = Mutex<[PendingHandshakes.Event]>([])
        func record(_ event: PendingHandshakes.Event) { events.withLock { $0.append(event) } }
        var outcomes: [PendingHandshakes.Outcome] {
            events.withLock { $0.compactMap { if case .settled(_, _, let outcome) = $0 { outcome } else { nil } } }
        }
        func count(_ refusal: PendingHandshakes.Refusal) -> Int {
            events.withLock { $0.filter { if case .refused(_, _, refusal) = $0 { true } else { false } }.count }
        }
    }

    @Test("past the per-address cap a connection is closed at once; other addresses still get in, until the total is reached")
    func capsRefuseAtTheAccept() async throws {
        let (transport, log, gate, refusals) = try await Self.listening(total: 3, perSource: 2)
        defer { Task { await transport.stop() } }
        let port = try LANHostileInputTests.port(of: transport)

        let silent = try await RawClient.connect(toPort: port, from: "127.0.0.1")
        let halfHello = try await RawClient.connect(toPort: port, from: "127.0.0.1")
        try await halfHello.write(lanFrameHeader(length: 3) + [1])
        try await within(Self.step, "two pending from 127.0.0.1") { while gate.count(from: "127.0.0.1") < 2 { try await Task.sleep(for: .milliseconds(5)) } }

        let third = try await RawClient.connect(toPort: port, from: "127.0.0.1")
        try await third.closedByPeer(within: Self.step)
        #expect(refusals.count(.sourceFull) == 1)

        let other = try await RawClient.connect(toPort: port, from: "127.0.0.2")
        try await within(Self.step, "the other address let in") { while gate.count < 3 { try await Task.sleep(for: .milliseconds(5)) } }
        let overTotal = try await RawClient.connect(toPort: port, from: "127.0.0.3")
        try await overTotal.closedByPeer(within: Self.step)
        #expect(refusals.count(.full) == 1)
        #expect(!silent.isClosedByPeer && !halfHello.isClosedByPeer && !other.isClosedByPeer, "the pending ones wait out their deadline")

        // A slot frees when its connection goes: then a newcomer says hello and is announced,
        // with the slot, whose time left is what the handshake gets.
        await silent.close()
        try await within(Self.step, "the slot freed") { while gate.count > 2 { try await Task.sleep(for: .milliseconds(5)) } }
        let newcomer = try await RawClient.connect(toPort: port, from: "127.0.0.3")
        try await newcomer.write(lanFrame(LANHello(listeningPort: 9, peer: nil).encoded))
        let accepted = try await log.next("the newcomer's link", within: Self.step) { event -> PendingHandshake?? in
            if case .linkAccepted(_, let from, let pending) = event, from.address == "127.0.0.3:9" { return .some(pending) }
            return nil
        }
        #expect(accepted != nil)
        for client in [halfHello, third, other, overTotal, newcomer] { await client.close() }
    }

    @Test("a connection silent past its deadline is closed and counted as timed out")
    func deadlineClosesSilentConnections() async throws {
        var limits = PendingHandshakes.Limits()
        limits.lanDeadline = .seconds(2)
        let events = Refusals()
        let gate = PendingHandshakes(limits: limits, observe: events.record)
        let transport = LANTransport(listeningOn: .loopback, pendingHandshakes: gate)
        let log = TransportEventLog(transport.events)
        try await transport.start()
        defer { Task { await transport.stop() } }
        let raw = try await RawClient.connect(toPort: try LANHostileInputTests.port(of: transport), from: "127.0.0.4")
        try await raw.write(lanFrameHeader(length: 3))
        try await raw.closedByPeer(within: Self.step)
        try await within(Self.step, "the slot settled") { while events.outcomes.isEmpty { try await Task.sleep(for: .milliseconds(5)) } }
        #expect(events.outcomes == [.timedOut])
        #expect(gate.count == 0)
        try await LANHostileInputTests.expectCarriesOn(transport, log)
    }
}

/// What a connection's source is, as the caps count it.
@Suite("LAN transport: handshake sources")
struct LANHandshakeSourceTests {
    @Test("IPv4 as it is, IPv4-mapped IPv6 as IPv4, other IPv6 by its /64")
    func sources() throws {
        #expect(LANTransport.source(of: try SocketAddress(ipAddress: "192.168.1.20", port: 1)) == "192.168.1.20")
        #expect(LANTransport.source(of: try SocketAddress(ipAddress: "::ffff:10.0.0.7", port: 1)) == "10.0.0.7")
        let a = LANTransport.source(of: try SocketAddress(ipAddress: "2001:db8:1:2:aaaa::1", port: 1))
        let b = LANTransport.source(of: try SocketAddress(ipAddress: "2001:db8:1:2:ffff:ffff:ffff:ffff", port: 1))
        #expect(a == "2001:db8:1:2::/64" && a == b)
        #expect(LANTransport.source(of: try SocketAddress(ipAddress: "2001:db8:1:3::1", port: 1)) != a)
    }
}
