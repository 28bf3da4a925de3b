import ArcusLoopback
import ArcusMesh
import ArcusTransportConformance
import Testing

/// When a session loses its last link, the multiplexer says `.needsLink(peer)`, and the agent
/// answers with `Multiplexer.reconnect(_:using:)`: a `LinkDialer` opens a link on the best
/// transport that still reaches the peer.
@Suite("Transport reconnect", .timeLimit(.minutes(2)))
struct TransportReconnectTests {
    @Test("the dialer prefers LAN; when the LAN link is cut, Bluetooth opens a new link and the session resumes")
    func lanCutReconnectsOverBluetooth() async throws {
        let lan = LoopbackNetwork(kind: .lan, conditions: .lan)
        let bluetooth = LoopbackNetwork(kind: .bluetooth, conditions: .ble.accelerated(by: 10))
        let alpha = Multiplexer(localPeer: .alpha, configuration: SessionTestPeers.quickConfiguration)
        let bravo = Multiplexer(localPeer: .bravo, configuration: SessionTestPeers.quickConfiguration)
        let alphaTransports = [bluetooth, lan].map { LoopbackTransport(name: "alpha", peer: .alpha, on: $0) }
        let bravoTransports = [bluetooth, lan].map { LoopbackTransport(name: "bravo", peer: .bravo, on: $0) }
        defer {
            Task {
                for transport in alphaTransports + bravoTransports { await transport.stop() }
                await alpha.close()
                await bravo.close()
            }
        }
        // Bravo accepts on both transports; alpha answers every `.needsLink` by dialling again.
        for transport in bravoTransports {
            Task {
                for await event in transport.events {
                    if case .linkAccepted(let link, _, _) = event { _ = try? await bravo.add(link, as: .acceptor) }
                }
            }
        }
        let dialer = LinkDialer(alphaTransports)
        Task {
            for await event in alpha.events {
                if case .needsLink(let peer) = event { _ = try? await alpha.reconnect(peer, using: dialer) }
            }
        }
        for transport in alphaTransports + bravoTransports { try await transport.start() }
        try await eventually("alpha reaches bravo by LAN and Bluetooth") { await dialer.routes(to: .bravo).count == 2 }
        #expect(await dialer.routes(to: .bravo).map(\.endpoint.kind) == [.lan, .bluetooth])

        let sender = try await alpha.reconnect(.bravo, using: dialer)
        let receiver = await bravo.session(with: .alpha)
        try await sender.send([1])
        #expect(try await receiver.incoming.next(1) == [[1]])
        #expect(await sender.activeLink?.kind == .lan)

        lan.setInRange("alpha", "bravo", false)
        try await sender.send([2])
        #expect(try await receiver.incoming.next(1) == [[2]])
        try await eventually("the session runs on Bluetooth") { await sender.activeLink?.kind == .bluetooth }
        await #expect(throws: LinkDialError.self) {
            bluetooth.setInRange("alpha", "bravo", false)
            _ = try await dialer.open(to: .bravo)
        }
    }
}
