@testable import ArcusCloud
import ArcusMesh
import ArcusTestSupport
import ArcusTransportConformance
import Synchronization
import Testing

/// Whatever anyone who can publish on a mesh's subjects sends — garbage, forged announcements
/// and link frames, recordings replayed — two peers' link carries on, neither believes the other
/// restarted or left, and nothing crashes. The intruder is a plain NATS client on the same
/// nats-server, subscribed to everything, as the relay's operator (or another tenant with the
/// mesh's subject permissions) would be.
@Suite("Cloud transport against a hostile relay", .timeLimit(.minutes(3)))
struct CloudHostileRelayTests {
    /// Two transports with a link between them, and everything the acceptor reported.
    struct Pair {
        let dialler: CloudTransport
        let acceptor: CloudTransport
        let link: CloudLink
        let accepted: CloudLink
        let acceptorEvents: RecordedTransportEvents
        let diallerEvents: RecordedTransportEvents

        func stop() async {
            await dialler.stop()
            await acceptor.stop()
        }

        /// Messages still go both ways, and neither end closed.
        func carriesOn(_ marker: UInt8) async throws {
            try await link.send([marker, 1])
            #expect(try await accepted.incoming.next(1, within: .seconds(30)) == [[marker, 1]])
            try await accepted.send([marker, 2])
            #expect(try await link.incoming.next(1, within: .seconds(30)) == [[marker, 2]])
            #expect(!link.isClosed && !accepted.isClosed, "\(link.failure ?? "") \(accepted.failure ?? "")")
        }

        /// Neither side saw the other restart or leave.
        func noPeerLost() async {
            #expect(acceptorEvents.lost.isEmpty, "the acceptor believed \(acceptorEvents.lost) lost")
            #expect(diallerEvents.lost.isEmpty, "the dialler believed \(diallerEvents.lost) lost")
            #expect(await acceptor.reachablePeers.map(\.peer) == [dialler.peer])
            #expect(await dialler.reachablePeers.map(\.peer) == [acceptor.peer])
        }
    }

    static func connectedPair() async throws -> Pair {
        let url = try SharedRelay.url()
        let mesh = SharedRelay.freshMesh()
        let dialler = CloudTransport(settings: .testing(url, mesh: mesh), identity: PeerIdentity(), pendingHandshakes: .generous())
        let acceptor = CloudTransport(settings: .testing(url, mesh: mesh), identity: PeerIdentity(), pendingHandshakes: .generous())
        let acceptorEvents = RecordedTransportEvents(acceptor.events)
        let diallerEvents = RecordedTransportEvents(dialler.events)
        try await acceptor.start()
        try await dialler.start()
        let link = try await dialler.open(to: acceptor.localEndpoint) as! CloudLink
        let accepted = try await acceptorEvents.link(id: link.key.id)
        return Pair(dialler: dialler, acceptor: acceptor, link: link, accepted: accepted, acceptorEvents: acceptorEvents, diallerEvents: diallerEvents)
    }

    @Test("garbage on a peer's link and presence subjects is dropped and counted; its link carries on")
    func garbageIsDropped() async throws {
        let pair = try await Self.connectedPair()
        defer { Task { await pair.stop() } }
        let intruder = try NATSConnection(NATSOptions(urls: [try SharedRelay.url()]))
        defer { intruder.close() }
        let subjects = pair.acceptor.subjects
        let target = subjects.link(to: pair.acceptor.peer, from: pair.dialler.peer)
        var junk: [[UInt8]] = [[], [1], [2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0], [9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9]]
        junk.append(CloudFrame(.data, fromDialler: true, link: 1, body: [UInt8](repeating: 0, count: 64 << 10)).encoded + [UInt8](repeating: 0, count: 16))
        for bytes in junk {
            try intruder.publish(target, bytes)
            try intruder.publish(subjects.presence, bytes)
        }
        try intruder.flush(within: .seconds(5))
        try await pair.carriesOn(1)
        #expect(pair.acceptor.frameErrors >= 4)
        await pair.noPeerLost()
    }

    @Test("forged link frames — data in sequence, close, credit, open and accept — are dropped; the link carries on")
    func forgedFramesAreDropped() async throws {
        let pair = try await Self.connectedPair()
        defer { Task { await pair.stop() } }
        try await pair.carriesOn(1)
        let intruder = try NATSConnection(NATSOptions(urls: [try SharedRelay.url()]))
        defer { intruder.close() }
        let subjects = pair.acceptor.subjects
        let id = pair.link.key.id
        let junkTag = [UInt8](repeating: 0x5A, count: CloudFrameSeal.tagSize)
        // Both ends' next data frame is number 1; every kind a frame can have, with a made-up
        // tag, toward both ends, in the direction each end expects.
        let towardAcceptor = subjects.link(to: pair.acceptor.peer, from: pair.dialler.peer)
        let towardDialler = subjects.link(to: pair.dialler.peer, from: pair.acceptor.peer)
        let fromDialler: [CloudFrame] = [
            CloudFrame(.data, fromDialler: true, link: id, value: 1, body: [6, 6, 6]),
            CloudFrame(.credit, fromDialler: true, link: id, value: 1 << 30),
            // Everything an open holds is public (both runs, the dialler's key): only the tag is not.
            CloudFrame(
                .open, fromDialler: true, link: id + 7, value: 1,
                body: pair.dialler.instance.bigEndianBytes + pair.acceptor.instance.bigEndianBytes + pair.dialler.identity.publicKey.bytes
            ),
            CloudFrame(.close, fromDialler: true, link: id),
        ]
        let fromAcceptor: [CloudFrame] = [
            CloudFrame(.data, fromDialler: false, link: id, value: 1, body: [6, 6, 6]),
            CloudFrame(.credit, fromDialler: false, link: id, value: 1 << 30),
            CloudFrame(.accept, fromDialler: false, link: id, value: 1, body: [UInt8](repeating: 0, count: 8)),
            CloudFrame(.close, fromDialler: false, link: id),
        ]
        for frame in fromDialler { try intruder.publish(towardAcceptor, frame.encoded + junkTag) }
        for frame in fromAcceptor { try intruder.publish(towardDialler, frame.encoded + junkTag) }
        // An open signed with the intruder's own key, naming the dialler as its sender: its key
        // does not hash to the dialler's id.
        let mallory = PeerIdentity()
        let malloryKey = CloudFrameSeal.pairKey(mallory, with: pair.acceptor.identity.publicKey, mesh: subjects.mesh)!
        let malloryOpen = CloudFrame(
            .open, fromDialler: true, link: id + 1, value: 1,
            body: pair.dialler.instance.bigEndianBytes + pair.acceptor.instance.bigEndianBytes + mallory.publicKey.bytes
        )
        let malloryAsDialler = CloudFrameSeal(
            key: malloryKey, local: pair.dialler.peer, localInstance: pair.dialler.instance, remote: pair.acceptor.peer,
            remoteInstance: pair.acceptor.instance
        )
        try intruder.publish(towardAcceptor, malloryAsDialler.seal(malloryOpen))
        try intruder.flush(within: .seconds(5))

        #expect(await eventually { pair.acceptor.forgeries >= 5 && pair.dialler.forgeries >= 4 },
                "forgeries counted: acceptor \(pair.acceptor.forgeries), dialler \(pair.dialler.forgeries)")
        try await pair.carriesOn(2)
        try await pair.carriesOn(3)
        await pair.noPeerLost()
        #expect(pair.acceptorEvents.acceptedCount == 1, "no link was accepted for a forged open")
    }

    @Test("forged announcements — a new run, leaving, unsigned, re-signed, replayed — change nothing")
    func forgedAnnouncementsChangeNothing() async throws {
        let pair = try await Self.connectedPair()
        defer { Task { await pair.stop() } }
        let subjects = pair.acceptor.subjects
        let recorder = try RelayTap(url: try SharedRelay.url(), subject: subjects.presence)
        defer { recorder.close() }
        #expect(await eventually { recorder.payloads.contains { CloudAnnouncement(decoding: $0)?.peer == pair.dialler.peer } })
        let recorded = recorder.payloads.filter { CloudAnnouncement(decoding: $0)?.peer == pair.dialler.peer }
        let genuine = try #require(recorded.last)
        let intruder = try NATSConnection(NATSOptions(urls: [try SharedRelay.url()]))
        defer { intruder.close() }

        // The dialler's own announcement, altered: a new run, a later time, leaving.
        var newRun = genuine
        newRun[76] ^= 0xFF
        var later = genuine
        later[84] = 0xFF
        var leaving = genuine
        leaving[11] = CloudAnnouncement.Kind.leaving.rawValue
        // Signed, but by another key: it announces someone else, whatever it claims.
        let impostor = CloudAnnouncement(.leaving, by: PeerIdentity(), instance: pair.dialler.instance, time: .max, storesFrames: false, mesh: subjects.mesh)
        // The first version's format, unsigned, for the dialler's id.
        let unsigned = { (kind: UInt8, instance: UInt64) in Array("ARCUS-NATS1".utf8) + [kind] + pair.dialler.peer.bytes + instance.bigEndianBytes + [0] }
        for forged in [newRun, later, leaving, impostor.encoded, unsigned(1, 42), unsigned(2, pair.dialler.instance)] + recorded {
            try intruder.publish(subjects.presence, forged)
        }
        try intruder.flush(within: .seconds(5))

        #expect(await eventually { pair.acceptor.forgeries >= 3 }, "forgeries counted: \(pair.acceptor.forgeries)")
        try await Task.sleep(for: .seconds(1))
        try await pair.carriesOn(1)
        await pair.noPeerLost()
    }

    @Test("genuine frames recorded and replayed — data, credit, open, accept — change nothing; the link carries on")
    func replayedFramesChangeNothing() async throws {
        let pair = try await Self.connectedPair()
        defer { Task { await pair.stop() } }
        let subjects = pair.acceptor.subjects
        let tap = try RelayTap(url: try SharedRelay.url(), subject: "arcus.\(subjects.mesh).link.>")
        defer { tap.close() }
        // Enough traffic both ways for credit frames (a quarter window, 64 KiB, read).
        for round in 0..<12 {
            try await pair.link.send([UInt8](repeating: UInt8(round), count: 8 << 10))
            _ = try await pair.accepted.incoming.next(1, within: .seconds(30))
            try await pair.accepted.send([UInt8](repeating: UInt8(round), count: 8 << 10))
            _ = try await pair.link.incoming.next(1, within: .seconds(30))
        }
        #expect(await eventually { tap.messages.contains { $0.payload.count > 1 && $0.payload[1] == CloudFrame.Kind.credit.rawValue } },
                "no credit frame was seen")
        let intruder = try NATSConnection(NATSOptions(urls: [try SharedRelay.url()]))
        defer { intruder.close() }
        for _ in 0..<3 {
            for message in tap.messages { try intruder.publish(message.subject, message.payload) }
        }
        try intruder.flush(within: .seconds(5))
        try await Task.sleep(for: .seconds(1))
        try await pair.carriesOn(7)
        #expect(pair.acceptorEvents.acceptedCount == 1, "a replayed open made no second link")

        // The replayed credit granted nothing: with the reader paused, the sender stops at a
        // window (credit inflated by replays would overrun it, and the receiver would close).
        let burst = (0..<48).map { [UInt8](repeating: UInt8($0), count: 8 << 10) }
        let sending = Task { for message in burst { try await pair.link.send(message) } }
        try await Task.sleep(for: .seconds(2))
        #expect(!pair.accepted.isClosed, "the receiver closed: \(pair.accepted.failure ?? "")")
        #expect(try await pair.accepted.incoming.next(burst.count, within: .seconds(30)) == burst)
        try await sending.value
        await pair.noPeerLost()
    }

    @Test("a peer past its pending-handshake cap has its opens refused at once, and its dials fail without waiting out their timeout")
    func pendingHandshakeCapPerPeer() async throws {
        let url = try SharedRelay.url()
        let mesh = SharedRelay.freshMesh()
        var limits = PendingHandshakes.Limits()
        limits.perSource = 3
        limits.cloudDeadline = .seconds(600)
        let gate = PendingHandshakes(limits: limits)
        var settings = CloudSettings.testing(url, mesh: mesh)
        settings.dialTimeout = .seconds(120)
        let dialler = CloudTransport(settings: settings, identity: PeerIdentity(), pendingHandshakes: .generous())
        let acceptor = CloudTransport(settings: settings, identity: PeerIdentity(), pendingHandshakes: gate)
        // The links stay pending: nobody settles them.
        let events = RecordedTransportEvents(acceptor.events, settling: false)
        try await acceptor.start()
        try await dialler.start()
        defer { Task { await dialler.stop(); await acceptor.stop() } }

        let started = ContinuousClock.now
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<6 { group.addTask { (try? await dialler.open(to: acceptor.localEndpoint)) != nil } }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 3, "\(outcomes)")
        #expect(ContinuousClock.now - started < .seconds(60), "refused dials waited for their timeout")
        #expect(events.acceptedCount == 3)
        #expect(gate.count(from: dialler.peer.description) == 3)
    }

    @Test("a real restart still closes the links to the earlier run")
    func realRestartIsSeen() async throws {
        let pair = try await Self.connectedPair()
        defer { Task { await pair.stop() } }
        // The dialler's process "restarts": the same identity, a new run, without saying goodbye.
        await pair.dialler.stop(sayingGoodbye: false)
        let again = CloudTransport(settings: pair.dialler.settings, identity: pair.dialler.identity, pendingHandshakes: .generous())
        try await again.start()
        defer { Task { await again.stop() } }
        #expect(await eventually { pair.accepted.isClosed }, "the link to the earlier run stayed open")
        #expect(pair.accepted.failure == "the peer restarted")
    }
}

/// Everything one transport reported, and the links it accepted, by id (their pending slots
/// settled: the test owns them and runs no handshake).
final class RecordedTransportEvents: Sendable {
    private let state = Mutex<(lost: [TransportEndpoint], accepted: [UInt64: CloudLink], acceptedCount: Int)>(([], [:], 0))

    private let settling: Bool

    init(_ events: AsyncStream<TransportEvent>, settling: Bool = true) {
        self.settling = settling
        Task { [self] in
            for await event in events { record(event) }
        }
    }

    private func record(_ event: TransportEvent) {
        switch event {
        case .peerLost(let endpoint):
            state.withLock { $0.lost.append(endpoint) }
        case .linkAccepted(let link, _, let pending):
            if settling { pending?.settle(.completed) }
            guard let link = link as? CloudLink else { return }
            state.withLock { $0.accepted[link.key.id] = link; $0.acceptedCount += 1 }
        case .peerAppeared:
            break
        }
    }

    var lost: [TransportEndpoint] { state.withLock { $0.lost } }
    var acceptedCount: Int { state.withLock { $0.acceptedCount } }

    func link(id: UInt64, within limit: Duration = .seconds(30)) async throws -> CloudLink {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let link = state.withLock({ $0.accepted[id] }) { return link }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw TransportError.unreachable(TransportEndpoint(kind: .cloud, address: "link \(id)"))
    }
}

/// A client subscribed to `subject` on the relay, keeping everything it hears.
final class RelayTap: Sendable {
    private let connection: NATSConnection
    private let received = ReceivedMessages()
    private let subscription: NATSSubscription

    init(url: String, subject: String) throws {
        connection = try NATSConnection(NATSOptions(urls: [url]))
        let received = self.received
        subscription = try connection.subscribe(subject) { received.append($0) }
        try connection.flush(within: .seconds(5))
    }

    var messages: [NATSMessage] { received.all }
    var payloads: [[UInt8]] { received.all.map(\.payload) }

    func close() {
        subscription.cancel()
        connection.close()
    }
}
