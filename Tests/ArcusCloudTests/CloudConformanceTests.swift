@testable import ArcusCloud
import ArcusMesh
import ArcusTestSupport
import ArcusTransportConformance
import Foundation
import Synchronization
import Testing

/// The transport conformance checks on `CloudTransport` through a real nats-server on 127.0.0.1
/// with JetStream. Each fixture is a mesh of its own on the shared relay, so that checks running
/// at once never see each other's peers. A relay cannot move peers out of each other's reach,
/// so there is no reach check (the cut tests in CloudRelayTests cover a peer losing the relay).
@Suite("Cloud transport conformance", .timeLimit(.minutes(3)))
struct CloudTransportConformanceTests {
    static let cloud = TransportConformance(
        name: "cloud transport through nats-server",
        makeTransports: { count in
            let relay = try SharedRelay.url()
            let mesh = SharedRelay.freshMesh()
            let transports = (0..<count).map { _ in CloudTransport(settings: .testing(relay, mesh: mesh), identity: PeerIdentity(), pendingHandshakes: .generous()) }
            return TransportFixture(transports: transports)
        },
        sever: { link in link.close() },
        bufferLimit: CloudSettings.testing("nats://127.0.0.1:1", mesh: "").window,
        unknownAddress: PeerID.random().description
    )

    @Test("started transports discover each other")
    func discovery() async throws {
        try await Self.cloud.checkDiscovery()
    }

    @Test("a stopped transport is lost by its peers and its events finish")
    func stopIsSeen() async throws {
        try await Self.cloud.checkStopIsSeenByPeers()
    }

    @Test("a dialled link is accepted by the peer and carries both ways")
    func openIsAccepted() async throws {
        try await Self.cloud.checkOpenIsAccepted()
    }

    @Test("dialling an unknown or stopped peer fails with a TransportError")
    func unreachableDialsFail() async throws {
        try await Self.cloud.checkUnreachableDialsFail()
    }

    @Test("50 dials at once each reach the peer")
    func manyDials() async throws {
        try await Self.cloud.checkManyDialsAtOnce(50)
    }

    @Test("stopping a transport closes its links on both ends")
    func stopClosesLinks() async throws {
        try await Self.cloud.checkStopClosesLinks()
    }
}

/// The link conformance checks on links between two cloud transports. All pairs run between
/// the same two transports (a relay's links are told apart by id, not by address); each dial is
/// matched to its accepted end by the link id.
@Suite("Cloud link conformance", .timeLimit(.minutes(3)))
struct CloudLinkConformanceTests {
    static let links = LinkConformance(
        name: "cloud links through nats-server",
        makePair: { try await CloudPairs.shared.pair() },
        sever: { link in link.close() },
        bufferLimit: CloudSettings.testing("nats://127.0.0.1:1", mesh: "").window
    )

    @Test("messages of every size up to the MTU arrive whole and in order, both ways at once")
    func deliversInOrder() async throws {
        try await Self.links.checkDeliversInOrderBothWays()
    }

    @Test("mtu - 1 and mtu bytes go through; mtu + 1 is refused and the link carries on")
    func messagesAroundTheMTU() async throws {
        try await Self.links.checkMessagesAroundTheMTU()
    }

    @Test("closing either end finishes both")
    func closeFromEitherEnd() async throws {
        try await Self.links.checkCloseFromEitherEnd()
    }

    @Test("a send suspended on a full link fails when the peer closes")
    func closeFailsSuspendedSends() async throws {
        try await Self.links.checkCloseFailsSuspendedSends()
    }

    @Test("a peer vanishing mid-stream leaves an ordered prefix")
    func peerVanishing() async throws {
        try await Self.links.checkPeerVanishingMidStream()
    }

    @Test("a fast producer is held back by a slow consumer, losing nothing")
    func backpressure() async throws {
        try await Self.links.checkBackpressure()
    }

    @Test("100 links at once each carry their own messages")
    func manyLinks() async throws {
        try await Self.links.checkManyLinksAtOnce(pairs: 100)
    }
}

/// One nats-server with JetStream for this test process (its guard stops it when the process
/// ends), or the one the test command started (ARCUS_TEST_NATS_URL).
enum SharedRelay {
    private static let server = Mutex<Result<String, any Error>?>(nil)
    private static let meshes = Atomic<Int>(0)

    static func url() throws -> String {
        if let url = ProcessInfo.processInfo.environment["ARCUS_TEST_NATS_URL"] { return url }
        return try server.withLock { server in
            if server == nil {
                server = Result { try NATSServerProcess.start(jetStream: true) }.map { started in
                    Self.keep(started)
                    return started.url
                }
            }
            return try server!.get()
        }
    }

    /// A mesh hash no other fixture in this process uses.
    static func freshMesh() -> String {
        let number = meshes.add(1, ordering: .relaxed).newValue
        return String(format: "%08x%08x", UInt32(getpid()), UInt32(number))
    }

    private static let kept = Mutex<[NATSServerProcess]>([])
    private static func keep(_ server: NATSServerProcess) { kept.withLock { $0.append(server) } }
}

extension CloudSettings {
    /// Settings for tests: the relay at `url`, quick announcements, a small window so that
    /// back-pressure shows with little data.
    static func testing(_ url: String, mesh: String) -> CloudSettings {
        var settings = CloudSettings(connection: NATSOptions(urls: [url]), meshHash: mesh)
        settings.announceInterval = .milliseconds(250)
        // Generous: tests run dozens of transports on two cooperative threads beside CPU-bound
        // suites, and a starved peer announces late.
        settings.peerExpiry = .seconds(6)
        settings.announcementWait = .seconds(3)
        settings.dialTimeout = .seconds(10)
        settings.storedFramesMaxAge = .seconds(600)
        settings.storedFramesMaxBytes = 64 << 20
        return settings
    }
}

extension PeerID {
    static func random() -> PeerID {
        PeerID(bytes: (0..<PeerID.size).map { _ in UInt8.random(in: 0...255) })!
    }
}

/// Two running cloud transports that every link pair of the link suite is made between.
actor CloudPairs {
    static let shared = CloudPairs()

    /// Made once: the task, not its result, is kept, so that pairs asked for while the two
    /// transports start (the actor is re-entered at each await) wait for the same two.
    private var made: Task<(CloudTransport, CloudTransport, AcceptedLinks), any Error>?

    func pair() async throws -> (any Link, any Link) {
        let (dialler, acceptor, accepted) = try await transports()
        let opened = try await dialler.open(to: acceptor.localEndpoint)
        guard let cloudLink = opened as? CloudLink else { throw CancellationError() }
        return (opened, try await accepted.link(id: cloudLink.key.id))
    }

    private func transports() async throws -> (CloudTransport, CloudTransport, AcceptedLinks) {
        if let made { return try await made.value }
        let task = Task {
            let url = try SharedRelay.url()
            let mesh = SharedRelay.freshMesh()
            let dialler = CloudTransport(settings: .testing(url, mesh: mesh), identity: PeerIdentity(), pendingHandshakes: .generous())
            let acceptor = CloudTransport(settings: .testing(url, mesh: mesh), identity: PeerIdentity(), pendingHandshakes: .generous())
            let accepted = AcceptedLinks(acceptor.events)
            try await acceptor.start()
            try await dialler.start()
            return (dialler, acceptor, accepted)
        }
        made = task
        return try await task.value
    }
}

/// The links a transport accepted, by link id, for matching each to its dialled end.
final class AcceptedLinks: Sendable {
    private let links = Mutex<[UInt64: CloudLink]>([:])

    init(_ events: AsyncStream<TransportEvent>) {
        Task { [self] in
            for await event in events {
                guard case .linkAccepted(let link, _, let pending) = event else { continue }
                // The test owns the link and runs no handshake on it.
                pending?.settle(.completed)
                if let link = link as? CloudLink { record(link) }
            }
        }
    }

    private func record(_ link: CloudLink) {
        links.withLock { $0[link.key.id] = link }
    }

    func link(id: UInt64, within limit: Duration = .seconds(30)) async throws -> CloudLink {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let link = links.withLock({ $0.removeValue(forKey: id) }) { return link }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw TransportError.unreachable(TransportEndpoint(kind: .cloud, address: "link \(id)"))
    }
}
