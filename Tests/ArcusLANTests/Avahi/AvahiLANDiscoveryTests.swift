import ArcusMesh
import Foundation
import Synchronization
import Testing
@testable import ArcusLAN

/// Two LAN transports on 127.0.0.1 that know nothing of each other find each other through the
/// real avahi-daemon (`AvahiDiscovery`), and one dials the other; an agent of another mesh,
/// visible on the LAN, is never announced.
@Suite(.serialized, .enabled(if: AvahiDaemon.answers || AvahiDaemon.required, "no avahi-daemon (CI=true makes this a failure)"))
struct AvahiLANDiscoveryTests {
    static func identity() -> PeerID { PeerID(bytes: (0..<PeerID.size).map { _ in UInt8.random(in: 0...255) })! }

    static func transport(mesh: String, peer: PeerID) -> LANTransport {
        let discovery = AvahiDiscovery(
            name: "arcus-lan-test-\(UInt32.random(in: 0...UInt32.max))", meshHash: mesh, interface: AvahiDaemon.loopback
        )
        return LANTransport(listeningOn: LANAddress(host: "127.0.0.1", port: 0), peer: peer, discovery: [discovery])
    }

    /// Collects a transport's events, for waiting on what it announced.
    final class Announcements: Sendable {
        let seen = Mutex<[TransportEvent]>([])
        let accepted = Mutex<[any Link]>([])

        init(_ transport: LANTransport) {
            let events = transport.events
            Task { [self] in
                for await event in events {
                    if case .linkAccepted(let link, _, _) = event { self.accepted.withLock { $0.append(link) } }
                    self.seen.withLock { $0.append(event) }
                }
            }
        }

        func appeared(_ peer: PeerID) -> TransportEndpoint? {
            seen.withLock { events in
                events.lazy.compactMap { event -> TransportEndpoint? in
                    if case .peerAppeared(let endpoint) = event, endpoint.peer == peer { return endpoint }
                    return nil
                }.first
            }
        }
    }

    static func wait<T>(_ what: String, within limit: Duration = .seconds(60), _ probe: () -> T?) async throws -> T {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let value = probe() { return value }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TimedOut(what: "\(what) (within \(limit))", events: [])
    }

    @Test func transportsOfOneMeshFindEachOtherAndLinkWhileAnotherMeshStaysUnannounced() async throws {
        try #require(AvahiDaemon.answers, Comment(rawValue: AvahiDaemon.missing))
        let mesh = String(format: "%016llx", UInt64.random(in: 1...UInt64.max))
        let (alphaID, bravoID, strangerID) = (Self.identity(), Self.identity(), Self.identity())
        let stranger = Self.transport(mesh: "ffffffffffffffff", peer: strangerID)
        let alpha = Self.transport(mesh: mesh, peer: alphaID), bravo = Self.transport(mesh: mesh, peer: bravoID)
        let seenByAlpha = Announcements(alpha), seenByBravo = Announcements(bravo)
        _ = Announcements(stranger)
        try await stranger.start()
        try await alpha.start()
        try await bravo.start()

        // Each finds the other, at the port it listens on, with its peer id.
        let bravoSeen = try await Self.wait("alpha to find bravo") { seenByAlpha.appeared(bravoID) }
        #expect(bravoSeen.address == bravo.localEndpoint.address)
        let alphaSeen = try await Self.wait("bravo to find alpha") { seenByBravo.appeared(alphaID) }
        #expect(alphaSeen.address == alpha.localEndpoint.address)

        // A raw browser sees the stranger on the LAN; alpha never announces it.
        let observer = AvahiService(interface: AvahiDaemon.loopback)
        let observed = EventLog(of: observer)
        try observer.start(advertising: nil)
        _ = try await observed.first("the stranger's service on the LAN") { event -> Bool? in
            if case .found(let service) = event, service.txt.peer == strangerID.description { return true }
            return nil
        }
        observer.stop()
        #expect(seenByAlpha.appeared(strangerID) == nil)

        // The endpoint discovery gave is one to dial.
        let link = try await alpha.open(to: bravoSeen)
        try await link.send([1, 2, 3])
        let accepted = try await Self.wait("bravo to accept the link") { seenByBravo.accepted.withLock { $0.first } }
        var incoming = accepted.incoming.makeAsyncIterator()
        #expect(await incoming.next() == [1, 2, 3])

        await alpha.stop()
        await bravo.stop()
        await stranger.stop()
    }
}
