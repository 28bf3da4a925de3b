import ArcusLoopback
import ArcusMesh
import ArcusTransportConformance
import Foundation
import Synchronization
import Testing

/// Later links between two peers that once ran the full handshake resume with a ticket.
@Suite("Resumed handshake", .timeLimit(.minutes(1)))
struct ResumedHandshakeTests {
    typealias Fixtures = SecurityFixtures

    /// Alice and Bob as two running agents: one handshake each, whose tickets outlive links.
    struct Peers {
        var alice = Fixtures.sharedSecret(Fixtures.alice)
        var bob = Fixtures.sharedSecret(Fixtures.bob)

        /// A new link that Alice dials, naming Bob so that she resumes when she can.
        func link(
            aliceHint: [UInt8] = [], bobHint: [UInt8] = []
        ) async throws -> (alice: SecureLink, bob: SecureLink, bytes: Int) {
            let (a, b) = Loopback.pair(.instant, name: "resumption")
            let (alice, bob) = (self.alice, self.bob)
            async let dialled = alice.secure(a, as: .initiator, peer: Fixtures.bob.peerID, hint: { _ in aliceHint })
            async let accepted = bob.secure(b, as: .responder, hint: { _ in bobHint })
            let links = try await (dialled, accepted)
            return (links.0, links.1, a.statistics.bytesSent + b.statistics.bytesSent)
        }
    }

    @Test("a second link resumes in under 60 bytes instead of some 290, the same peers, both ways, with the hints exchanged")
    func resumes() async throws {
        let peers = Peers()
        let first = try await peers.link()
        defer { first.alice.close() }
        #expect(first.alice.resumption == nil && first.bob.resumption == nil)
        #expect(first.bytes > 250)
        #expect(peers.alice.tickets.canResume(with: Fixtures.bob.peerID))

        let second = try await peers.link(aliceHint: [1, 2, 3], bobHint: [4, 5])
        defer { second.alice.close() }
        #expect(second.bytes < 60)
        #expect(second.alice.resumption == ResumptionHints(sent: [1, 2, 3], received: [4, 5]))
        #expect(second.bob.resumption == ResumptionHints(sent: [4, 5], received: [1, 2, 3]))
        #expect(second.alice.peer == first.alice.peer && second.bob.peer == first.bob.peer)

        try await second.alice.send([7, 7])
        try await second.bob.send([8])
        #expect(try await second.bob.incoming.next(1) == [[7, 7]])
        #expect(try await second.alice.incoming.next(1) == [[8]])

        // The chain goes on: the next ticket replaced the one used.
        let third = try await peers.link()
        defer { third.alice.close() }
        #expect(third.alice.resumption != nil && third.bytes < 60)
    }

    @Test("a recorded resumption replayed on a new link finds no ticket: refused, and no link without the full handshake")
    func replayRefused() async throws {
        let peers = Peers()
        _ = try await peers.link()
        // Alice's resumption, recorded as it crosses the link.
        let (a, b) = Loopback.pair(.instant, name: "recorded")
        let tap = FrameTap(a)
        async let accepted = peers.bob.secure(b, as: .responder)
        let resumed = try await peers.alice.secure(tap, as: .initiator, peer: Fixtures.bob.peerID)
        _ = try await accepted
        #expect(resumed.resumption != nil)
        let recorded = try #require(tap.frames.first)

        // An eavesdropper sends it again on a link of its own.
        let (intruder, victim) = Loopback.pair(.instant, name: "replay")
        let outcome = Task { try await peers.bob.secure(victim, as: .responder) }
        try await intruder.send(recorded)
        #expect(try await intruder.incoming.next(1) == [[0]])  // "no such ticket: full handshake"
        intruder.close()
        await #expect(throws: HandshakeError.self) { try await outcome.value }
        #expect(peers.bob.tickets.count == 1)  // the chain with Alice is untouched
    }

    @Test("a responder that lost its tickets (restarted) answers the full handshake on the same link")
    func responderWithoutTicket() async throws {
        var peers = Peers()
        _ = try await peers.link()
        peers.bob = Fixtures.sharedSecret(Fixtures.bob)
        let link = try await peers.link()
        defer { link.alice.close() }
        #expect(link.alice.resumption == nil && link.alice.peer.peerID == Fixtures.bob.peerID)
        #expect(peers.alice.tickets.canResume(with: Fixtures.bob.peerID) && peers.bob.tickets.count == 1)
        try await link.bob.send([1])
        #expect(try await link.alice.incoming.next(1) == [[1]])
    }

    @Test("a chain ends at its policy's length: the next link runs the full handshake and starts a new chain")
    func policyLength() async throws {
        let policy = ResumptionPolicy(maximumResumptions: 1)
        var peers = Peers()
        peers.alice = MeshHandshake(identity: Fixtures.alice, credential: .sharedSecret(Fixtures.secret), tickets: ResumptionTickets(policy: policy))
        peers.bob = MeshHandshake(identity: Fixtures.bob, credential: .sharedSecret(Fixtures.secret), tickets: ResumptionTickets(policy: policy))
        let kinds = try await (0..<4).asyncMap { _ in try await peers.link().alice.resumption != nil }
        #expect(kinds == [false, true, false, true])
    }

    @Test("no resumption past the peer's certificate expiry: the full handshake then refuses the certificate")
    func certificateExpiry() async throws {
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let now: @Sendable () -> Date = { clock.withLock { $0 } }
        let expiry = clock.withLock { $0 }.addingTimeInterval(60)
        func certified(_ identity: PeerIdentity, _ name: String, expiresAt: Date?) throws -> MeshHandshake {
            let certificate = try Fixtures.authority.issue(to: identity.publicKey, name: name, permissions: .full, expiresAt: expiresAt)
            return MeshHandshake(identity: identity, credential: .certificate(certificate, authority: Fixtures.authority.publicKey), now: now)
        }
        var peers = Peers()
        peers.alice = try certified(Fixtures.alice, "alice", expiresAt: nil)
        peers.bob = try certified(Fixtures.bob, "bob", expiresAt: expiry)
        _ = try await peers.link()
        #expect(try await peers.link().alice.resumption != nil)

        clock.withLock { $0 = expiry.addingTimeInterval(1) }
        await #expect(throws: HandshakeError.self) { try await peers.link() }
    }

    @Test("a resumption whose hint was altered on the way does not authenticate, and no link is made")
    func alteredHint() async throws {
        let peers = Peers()
        _ = try await peers.link()
        let (a, b) = Loopback.pair(.instant, name: "altered")
        let tap = FrameTap(a)
        tap.isForwarding = false
        async let accepted = peers.bob.secure(b, as: .responder)
        let alice = peers.alice
        let dialled = Task { try await alice.secure(tap, as: .initiator, peer: Fixtures.bob.peerID, hint: { _ in [1, 2, 3, 4] }) }
        var resumption = try await waitForFrame(tap)
        resumption[resumption.count - 1] ^= 0xFF
        try await a.send(resumption)
        await #expect(throws: HandshakeError.self) { try await dialled.value }
        b.close()
        _ = try? await accepted
    }

    private func waitForFrame(_ tap: FrameTap) async throws -> [UInt8] {
        let deadline = ContinuousClock.now + .seconds(30)
        while tap.frames.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        return try #require(tap.frames.first)
    }
}

extension Range where Bound == Int {
    /// The results of `body` for each element, one after another.
    func asyncMap<T>(_ body: (Int) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await body(element)) }
        return results
    }
}
