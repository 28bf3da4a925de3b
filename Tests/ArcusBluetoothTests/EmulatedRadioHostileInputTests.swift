import ArcusBluetooth
import ArcusMesh
import ArcusTransportConformance
import Foundation
import Testing

/// Whatever lands in the emulated radio's directory or on its sockets, a transport neither
/// crashes nor announces it: a bad hello is hung up on, an SDU over the MTU ends its link, stale
/// or malformed adverts are ignored.
@Suite("Emulated radio hostile input", .timeLimit(.minutes(2)))
struct EmulatedRadioHostileInputTests {
    @Test("bad hellos are hung up on, unannounced; a good dial after them is the first link accepted")
    func badHellos() async throws {
        let fixture = try EmulatedRadioFixture(count: 2)
        let (a, b) = (fixture.transports[0], fixture.transports[1])
        let logs = try await fixture.start()
        defer { fixture.stopLater() }

        let path = try UnixSocketPath(fixture.settings.socketPath(of: b.peer.description))
        let garbage: [[UInt8]] = [[], [1, 2, 3], Array("ARCUS-BLE1".utf8), [UInt8](repeating: 0x41, count: 4_000)]
        for hello in garbage {
            let raw = try SeqPacketSocket.unix()
            try raw.connect(path)
            #expect(try raw.sendWithoutBlocking(hello))
            #expect(raw.waitForReadable(milliseconds: 30_000), "a bad hello of \(hello.count) bytes was not hung up on")
            var buffer = [UInt8](repeating: 0, count: 16)
            let received = try buffer.withUnsafeMutableBytes { try raw.receiveWithoutBlocking(into: $0) }
            #expect(received == .empty && raw.peekIsEndOfStream())
        }

        _ = try await a.open(to: b.localEndpoint)
        let first = try await logs[1].next("any accepted link") { event -> TransportEndpoint? in
            if case .linkAccepted(_, let from, _) = event { return from }
            return nil
        }
        #expect(first == a.localEndpoint)
    }

    @Test("channels that say nothing hold a pending-handshake slot each, by connecting process; past the cap one is hung up on at once, with no thread started")
    func pendingHandshakeCap() async throws {
        let directory = try temporaryRadioDirectory()
        let settings = EmulatedRadioSettings(directory: directory, scanInterval: .milliseconds(200), connectionSetup: .milliseconds(60))
        var limits = PendingHandshakes.Limits()
        limits.perSource = 2
        limits.bluetoothDeadline = .seconds(600)
        let gate = PendingHandshakes(limits: limits)
        let transport = BluetoothTransport(radio: .emulated(settings), peer: .numbered(1), pendingHandshakes: gate)
        let log = TransportEventLog(transport.events)
        try await transport.start()
        defer { Task { await transport.stop() } }

        let path = try UnixSocketPath(settings.socketPath(of: transport.peer.description))
        var silent: [SeqPacketSocket] = []
        for _ in 0..<2 {
            let raw = try SeqPacketSocket.unix()
            try raw.connect(path)
            silent.append(raw)
        }
        let this = "pid \(getpid())"
        try await within(.seconds(30), "two pending from this process") { while gate.count(from: this) < 2 { try await Task.sleep(for: .milliseconds(5)) } }
        let third = try SeqPacketSocket.unix()
        try third.connect(path)
        #expect(third.waitForReadable(milliseconds: 30_000) && third.peekIsEndOfStream(), "the third channel was not hung up on")
        #expect(!silent[0].waitForReadable(milliseconds: 100), "a pending channel was hung up on before its deadline")

        // The first says hello after all: announced, with its slot, which the owner settles.
        #expect(try silent[0].sendWithoutBlocking(Array("ARCUS-BLE1".utf8) + PeerID.numbered(9).bytes))
        let pending = try await log.next("the link that said hello") { event -> PendingHandshake?? in
            if case .linkAccepted(_, _, let pending) = event { return .some(pending) }
            return nil
        }
        #expect(pending?.source == this)
        #expect(gate.count(from: this) == 1, "the log settled the announced link's slot; the silent one holds its own")
    }

    @Test("an SDU over the MTU ends the link instead of arriving cut")
    func oversizeSDU() async throws {
        let fixture = try EmulatedRadioFixture(count: 1)
        let b = fixture.transports[0]
        let log = try await fixture.start()[0]
        defer { fixture.stopLater() }

        let intruder = PeerID.numbered(9)
        let raw = try SeqPacketSocket.unix()
        try raw.connect(try UnixSocketPath(fixture.settings.socketPath(of: b.peer.description)))
        #expect(try raw.sendWithoutBlocking(Array("ARCUS-BLE1".utf8) + intruder.bytes))
        let link = try await log.accepted(from: TransportEndpoint(kind: .bluetooth, address: intruder.description))
        #expect(try raw.sendWithoutBlocking([7]))
        #expect(try raw.sendWithoutBlocking([UInt8](repeating: 8, count: link.mtu + 1)))
        #expect(try await link.incoming.remaining(within: .seconds(30)) == [[7]])
    }

    @Test("adverts stale, malformed, misnamed, of another mesh or naming another socket are ignored; a fresh one appears, then ages out")
    func adverts() async throws {
        let fixture = try EmulatedRadioFixture(count: 1)
        let a = fixture.transports[0]
        let log = try await fixture.start()[0]
        defer { fixture.stopLater() }

        let settings = fixture.settings
        @Sendable func advert(_ peer: PeerID, age: Double, mesh: String = "", socket: String? = nil) -> String {
            let time = Date().timeIntervalSince1970 - age
            let socket = socket ?? settings.socketPath(of: peer.description)
            return #"{"peer":"\#(peer)","mesh":"\#(mesh)","socket":"\#(socket)","time":\#(time)}"#
        }
        let stale = PeerID.numbered(5), fresh = PeerID.numbered(6), misnamed = PeerID.numbered(7)
        let otherMesh = PeerID.numbered(10), elsewhere = PeerID.numbered(11)
        @Sendable func writeAdverts() throws {
            let adverts = [
                stale.description: advert(stale, age: 10),
                otherMesh.description: advert(otherMesh, age: 0, mesh: "another mesh"),
                elsewhere.description: advert(elsewhere, age: 0, socket: "/run/some-other.sock"),
                misnamed.description: advert(fresh, age: 0),
                "not-a-peer": advert(fresh, age: 0),
                PeerID.numbered(8).description: "{\"peer\": 1",
                PeerID.numbered(9).description: String(repeating: " ", count: 100_000) + advert(.numbered(9), age: 0),
                fresh.description: advert(fresh, age: 0),
            ]
            for (name, text) in adverts {
                try Data(text.utf8).write(to: URL(fileURLWithPath: settings.advertPath(of: name)), options: .atomic)
            }
        }
        // Re-advertised every half second, as a live peer would, until the test stops it.
        let advertising = Task {
            while !Task.isCancelled {
                try writeAdverts()
                try await Task.sleep(for: .milliseconds(500))
            }
        }
        let freshEndpoint = TransportEndpoint(kind: .bluetooth, address: fresh.description, peer: fresh)
        try await log.appeared(freshEndpoint, within: .seconds(30))
        try await Task.sleep(for: .seconds(1))
        #expect(await a.reachablePeers == [freshEndpoint])
        // Nobody rewrites it now: three seconds on, it is a peer gone quiet.
        advertising.cancel()
        _ = await advertising.result
        try await log.lost(freshEndpoint, within: .seconds(30))
        #expect(await a.reachablePeers.isEmpty)
    }
}
