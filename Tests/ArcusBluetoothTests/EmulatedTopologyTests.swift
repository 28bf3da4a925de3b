import ArcusBluetooth
import ArcusMesh
import ArcusTransportConformance
import Foundation
import Testing

/// Who hears whom on the emulated radio, as DIR/topology.json says.
@Suite("Emulated radio topology", .timeLimit(.minutes(2)))
struct EmulatedTopologyTests {
    @Test("a peer that does not hear another neither sees it nor can dial it; the other still sees it")
    func deafPeer() async throws {
        let fixture = try EmulatedRadioFixture(count: 3)
        let (a, b, c) = (fixture.transports[0], fixture.transports[1], fixture.transports[2])
        // a hears only c; b and c hear everyone.
        try EmulatedTopology(hears: [PeerID.numbered(0).description: [PeerID.numbered(2).description]])
            .write(to: fixture.settings.topologyPath)
        let logs = try await fixture.start()
        defer { fixture.stopLater() }

        try await logs[0].appeared(c.localEndpoint, within: .seconds(30))
        try await logs[1].appeared(a.localEndpoint, within: .seconds(30))
        // Several scans later a still has not seen b.
        try await Task.sleep(for: .seconds(1))
        #expect(await a.reachablePeers == [c.localEndpoint])
        await #expect(throws: TransportError.unreachable(b.localEndpoint)) { _ = try await a.open(to: b.localEndpoint) }
        // b sees a, but a link needs both to hear each other.
        await #expect(throws: TransportError.unreachable(a.localEndpoint)) { _ = try await b.open(to: a.localEndpoint) }
        let link = try await a.open(to: c.localEndpoint)
        try await link.send([1])
        let accepted = try await logs[2].accepted(from: a.localEndpoint, within: .seconds(30))
        #expect(try await accepted.incoming.next(1, within: .seconds(30)) == [[1]])
        link.close()
    }

    @Test("a dial takes the connection set-up time before the channel is up, as an LE connection does")
    func connectionSetup() async throws {
        let fixture = try EmulatedRadioFixture(count: 2, connectionSetup: .milliseconds(400))
        let logs = try await fixture.start()
        defer { fixture.stopLater() }
        try await logs[0].appeared(fixture.transports[1].localEndpoint, within: .seconds(30))
        let clock = ContinuousClock()
        let started = clock.now
        let link = try await fixture.transports[0].open(to: fixture.transports[1].localEndpoint)
        // A lower bound only: the radio waits at least this long, whatever the machine's speed.
        #expect(clock.now - started >= .milliseconds(400))
        link.close()
    }

    @Test("rewriting topology.json so two peers no longer hear each other severs their live link")
    func rangeChangeSevers() async throws {
        let fixture = try EmulatedRadioFixture(count: 2)
        let (a, b) = (fixture.transports[0], fixture.transports[1])
        let logs = try await fixture.start()
        defer { fixture.stopLater() }
        try await logs[0].appeared(b.localEndpoint, within: .seconds(30))

        let opened = try await a.open(to: b.localEndpoint)
        let accepted = try await logs[1].accepted(from: a.localEndpoint, within: .seconds(30))
        try await opened.send([1])
        #expect(try await accepted.incoming.next(1, within: .seconds(30)) == [[1]])

        try EmulatedTopology(hears: [PeerID.numbered(1).description: []]).write(to: fixture.settings.topologyPath)
        #expect(try await opened.incoming.remaining(within: .seconds(30)).isEmpty)
        #expect(try await accepted.incoming.remaining(within: .seconds(30)).isEmpty)
        await #expect(throws: LinkError.closed) { try await opened.send([2]) }
        // b hears no one now, so it loses a; a still hears b's adverts but cannot link to it.
        try await logs[1].lost(a.localEndpoint, within: .seconds(30))
        #expect(await a.reachablePeers == [b.localEndpoint])
        await #expect(throws: TransportError.unreachable(b.localEndpoint)) { _ = try await a.open(to: b.localEndpoint) }
    }

    @Test("a socket directory too long for sun_path fails start with a clear error")
    func longDirectory() async throws {
        let directory = "/tmp/" + String(repeating: "d", count: 70)
        let transport = BluetoothTransport(radio: .emulated(EmulatedRadioSettings(directory: directory)), peer: .numbered(1))
        await #expect(throws: UnixSocketPathTooLong.self) { try await transport.start() }
        await transport.stop()
    }

    @Test("the L2CAP radio on a machine without Bluetooth fails start with the unavailable error")
    func l2capUnavailable() async throws {
        let probe = socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue), 0)
        guard probe < 0 else {
            close(probe)
            return
        }
        let transport = BluetoothTransport(radio: .l2cap(L2CAPRadioSettings()), peer: .numbered(1))
        await #expect(throws: BluetoothUnavailable.noKernelSupport) { try await transport.start() }
        await transport.stop()
    }
}
