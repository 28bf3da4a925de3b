import ArcusLAN
import ArcusMesh
import ArcusTransportConformance
import Testing

/// Peers that break the framing: each loses its own connection, with a reason a log can show,
/// and the transport goes on accepting.
@Suite("LAN transport: hostile and broken peers", .timeLimit(.minutes(2)))
struct LANHostileInputTests {
    static let step: Duration = .seconds(45)

    @Test("a frame longer than the MTU closes its link with the reason; the transport carries on", arguments: [
        UInt32(LANLinkLimits().mtu + 1), UInt32.max,
    ])
    func frameTooLong(length: UInt32) async throws {
        let (transport, log) = try await Self.listening()
        let raw = try await RawClient.connect(toPort: try Self.port(of: transport))
        try await raw.write(lanFrame(LANHello(listeningPort: 9, peer: nil).encoded))
        let link = try #require(try await log.accepted(from: Self.endpoint(port: 9), within: Self.step) as? LANLink)

        try await raw.write(lanFrame([1, 2, 3]) + lanFrameHeader(length: length) + [0, 0, 0, 0])
        #expect(try await link.incoming.remaining(within: Self.step) == [[1, 2, 3]])
        #expect(link.failure == .frameTooLong(length: Int(length), limit: transport.limits.mtu))
        try await raw.closedByPeer(within: Self.step)

        try await Self.expectCarriesOn(transport, log)
        await transport.stop()
    }

    @Test("a peer that vanishes inside a frame closes its link with what was whole before it")
    func halfAFrame() async throws {
        let (transport, log) = try await Self.listening()
        let raw = try await RawClient.connect(toPort: try Self.port(of: transport))
        try await raw.write(lanFrame(LANHello(listeningPort: 9, peer: .init(bytes: [UInt8](repeating: 5, count: PeerID.size))).encoded))
        let link = try #require(try await log.accepted(from: Self.endpoint(port: 9), within: Self.step) as? LANLink)
        #expect(link.remote.peer == PeerID(bytes: [UInt8](repeating: 5, count: PeerID.size)))

        try await raw.write(lanFrame([4, 5]) + lanFrameHeader(length: 1000) + [UInt8](repeating: 6, count: 10))
        #expect(try await link.incoming.next(1, within: Self.step) == [[4, 5]])
        await raw.close()
        #expect(try await link.incoming.remaining(within: Self.step).isEmpty)
        #expect(link.failure == .truncatedFrame(received: 14, length: 1000))
        await #expect(throws: LinkError.closed) { try await link.send([1]) }

        try await Self.expectCarriesOn(transport, log)
        await transport.stop()
    }

    @Test("a connection whose first frame is not a hello is closed and never announced")
    func noHello() async throws {
        let (transport, log) = try await Self.listening()
        let raw = try await RawClient.connect(toPort: try Self.port(of: transport))
        try await raw.write(lanFrame([0x47, 0x45, 0x54, 0x20]))
        try await raw.closedByPeer(within: Self.step)
        try await Self.expectCarriesOn(transport, log)
        await transport.stop()
    }

    @Test("static peers are announced when the transport starts, and can be dialled")
    func staticPeers() async throws {
        let (listener, listenerLog) = try await Self.listening()
        let peers = try StaticPeers(parsing: [listener.localEndpoint.address, "127.0.0.1:1"])
        let dialler = LANTransport(listeningOn: .loopback, discovery: [peers])
        let log = TransportEventLog(dialler.events)
        try await dialler.start()

        let announced = TransportEndpoint(kind: .lan, address: listener.localEndpoint.address)
        try await log.appeared(announced, within: Self.step)
        try await log.appeared(TransportEndpoint(kind: .lan, address: "127.0.0.1:1"), within: Self.step)
        #expect(Set(await dialler.reachablePeers.map(\.address)) == [listener.localEndpoint.address, "127.0.0.1:1"])

        let opened = try await dialler.open(to: announced)
        let accepted = try await listenerLog.accepted(from: dialler.localEndpoint, within: Self.step)
        try await opened.send([9, 9])
        #expect(try await accepted.incoming.next(1, within: Self.step) == [[9, 9]])
        await #expect(throws: TransportError.unreachable(TransportEndpoint(kind: .lan, address: "127.0.0.1:1"))) {
            _ = try await dialler.open(to: TransportEndpoint(kind: .lan, address: "127.0.0.1:1"))
        }
        await dialler.stop()
        await listener.stop()
    }

    @Test("dialling another kind's endpoint or an address that is not host:port fails at once")
    func badEndpoints() async throws {
        let (transport, _) = try await Self.listening()
        let bluetooth = TransportEndpoint(kind: .bluetooth, address: transport.localEndpoint.address)
        await #expect(throws: TransportError.wrongKind(bluetooth, expected: .lan)) { _ = try await transport.open(to: bluetooth) }
        let malformed = TransportEndpoint(kind: .lan, address: "no-port-here")
        await #expect(throws: TransportError.unknownEndpoint(malformed)) { _ = try await transport.open(to: malformed) }
        await transport.stop()
    }

    // MARK: Helpers

    static func listening() async throws -> (LANTransport, TransportEventLog) {
        let transport = LANTransport(listeningOn: .loopback)
        let log = TransportEventLog(transport.events)
        try await transport.start()
        return (transport, log)
    }

    static func port(of transport: LANTransport) throws -> Int {
        try LANAddress(parsing: transport.localEndpoint.address).port
    }

    static func endpoint(port: Int) -> TransportEndpoint {
        TransportEndpoint(kind: .lan, address: "127.0.0.1:\(port)")
    }

    /// A well-behaved dialler still gets through, both ways.
    static func expectCarriesOn(_ transport: LANTransport, _ log: TransportEventLog) async throws {
        let dialler = LANTransport(listeningOn: .loopback)
        try await dialler.start()
        let opened = try await dialler.open(to: transport.localEndpoint)
        let accepted = try await log.accepted(from: dialler.localEndpoint, within: step)
        try await opened.send([1])
        try await accepted.send([2])
        #expect(try await accepted.incoming.next(1, within: step) == [[1]])
        #expect(try await opened.incoming.next(1, within: step) == [[2]])
        await dialler.stop()
    }
}
