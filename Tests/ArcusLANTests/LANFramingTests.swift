import ArcusLAN
import ArcusMesh
import ArcusTestSupport
import ArcusTransportConformance
import Testing

/// The wire format as a raw client writes it: frames whole however TCP cuts them, and a
/// connection that never introduces itself.
@Suite("LAN framing", .timeLimit(.minutes(2)))
struct LANFramingTests {
    static let step: Duration = .seconds(45)

    @Test("frames cut at random points arrive whole and in order", arguments: SeededRandom.seeds(count: 5, test: "lan-framing"))
    func framesCutAnywhere(seed: UInt64) async throws {
        print("lan-framing seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var random = SeededRandom(seed: seed)
        let (transport, log) = try await LANHostileInputTests.listening()
        let raw = try await RawClient.connect(toPort: try LANHostileInputTests.port(of: transport))
        try await raw.write(lanFrame(LANHello(listeningPort: 9, peer: nil).encoded))
        let link = try await log.accepted(from: LANHostileInputTests.endpoint(port: 9), within: Self.step)

        // Sizes from empty to the MTU, the edges more often than chance would pick them.
        let mtu = transport.limits.mtu
        let messages = (0..<40).map { index in
            let size = [0, 1, mtu, mtu - 1, Int.random(in: 0...4096, using: &random), Int.random(in: 0...mtu, using: &random)]
                .randomElement(using: &random)!
            return testMessage(index, size: size)
        }
        let stream = messages.flatMap(lanFrame)
        async let received = link.incoming.next(messages.count, within: Self.step)
        var start = 0
        while start < stream.count {
            let end = min(stream.count, start + Int.random(in: 1...9000, using: &random))
            try await raw.write(Array(stream[start..<end]))
            start = end
        }
        #expect(try await received == messages)
        await raw.close()
        await transport.stop()
    }

    @Test("stopping the transport drops a connection still waiting to say hello")
    func stopDropsSilentConnections() async throws {
        var limits = PendingHandshakes.Limits()
        // Far past the step limit: only `stop()` can close it in time.
        limits.lanDeadline = .seconds(600)
        let transport = LANTransport(listeningOn: .loopback, pendingHandshakes: PendingHandshakes(limits: limits))
        try await transport.start()
        let raw = try await RawClient.connect(toPort: try LANHostileInputTests.port(of: transport))
        // Something the transport has certainly read and is waiting past: half a hello.
        try await raw.write(lanFrameHeader(length: 3) + [1])
        try await Task.sleep(for: .milliseconds(50))
        await transport.stop()
        try await raw.closedByPeer(within: Self.step)
    }

    @Test("a connection that never sends its hello is closed at its pending handshake's deadline, and not announced")
    func silentConnection() async throws {
        var limits = PendingHandshakes.Limits()
        // Short, yet long enough for the well-behaved dial after it on a loaded machine: the
        // deadline runs from the accept, and a starved event loop may take a while to read a hello.
        limits.lanDeadline = .seconds(2)
        let transport = LANTransport(listeningOn: .loopback, pendingHandshakes: PendingHandshakes(limits: limits))
        let log = TransportEventLog(transport.events)
        try await transport.start()
        let raw = try await RawClient.connect(toPort: try LANHostileInputTests.port(of: transport))
        try await raw.closedByPeer(within: Self.step)
        try await LANHostileInputTests.expectCarriesOn(transport, log)
        await transport.stop()
    }
}
