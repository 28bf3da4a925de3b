import ArcusCodec
import ArcusLoopback
import ArcusMesh
import ArcusTestSupport
import ArcusTransportConformance
import Foundation
import Testing

@Suite("Mesh handshake", .timeLimit(.minutes(1)))
struct MeshHandshakeTests {
    typealias Fixtures = SecurityFixtures

    @Test("peers holding the shared secret learn each other's identity and exchange messages over BLE-sized links")
    func sharedSecret() async throws {
        let (a, b) = Loopback.pair(LoopbackConditions(mtu: 244), name: "handshake")
        let (alice, bob) = try await Fixtures.secure(a, b, initiator: Fixtures.sharedSecret(Fixtures.alice), responder: Fixtures.sharedSecret(Fixtures.bob))
        defer { alice.close() }
        #expect(alice.peer.peerID == Fixtures.bob.peerID && alice.peer.publicKey == Fixtures.bob.publicKey)
        #expect(bob.peer.peerID == Fixtures.alice.peerID)
        #expect(alice.peer.permissions == .full && alice.peer.name == nil)
        #expect(alice.mtu == 244 - 16)

        try await alice.send([1, 2, 3])
        try await bob.send([4])
        #expect(try await bob.incoming.next(1) == [[1, 2, 3]])
        #expect(try await alice.incoming.next(1) == [[4]])
    }

    @Test("a wrong shared secret is refused on both sides and nothing is delivered")
    func wrongSecret() async throws {
        let (a, b) = Loopback.pair(.instant, name: "handshake")
        let (initiator, responder) = await Fixtures.outcomes(
            a, b, initiator: Fixtures.sharedSecret(Fixtures.alice, Fixtures.otherSecret), responder: Fixtures.sharedSecret(Fixtures.bob)
        )
        #expect(throws: HandshakeError.membershipNotProven(link: b.description)) { try responder.get() }
        #expect(throws: HandshakeError.self) { try initiator.get() }
        #expect(a.isClosed && b.isClosed)
        // Only the first message went out: the responder refused it before answering.
        #expect(b.statistics.messagesSent == 0)
    }

    @Test("certified peers learn each other's name and permissions")
    func certificates() async throws {
        let (a, b) = Loopback.pair(LoopbackConditions(mtu: 244), name: "handshake")
        let readOnly = CollectionPermissions(read: CollectionSet(["cars"]), write: .none)
        // Many long collection names: the certificate outgrows one BLE packet and is fragmented.
        let wide = CollectionPermissions(read: CollectionSet((0..<40).map { "collection-with-a-long-name-\($0)" }), write: .all)
        let (alice, bob) = try await Fixtures.secure(
            a, b, initiator: Fixtures.certified(Fixtures.alice, name: "alice", permissions: wide),
            responder: Fixtures.certified(Fixtures.bob, name: "bob", permissions: readOnly)
        )
        defer { alice.close() }
        #expect(alice.peer.name == "bob" && alice.peer.permissions == readOnly && alice.peer.peerID == Fixtures.bob.peerID)
        #expect(bob.peer.name == "alice" && bob.peer.permissions == wide)
        try await bob.send([9])
        #expect(try await alice.incoming.next(1) == [[9]])
    }

    @Test("a certificate signed by another authority is refused, on whichever side shows it", arguments: [true, false])
    func otherAuthority(intruderInitiates: Bool) async throws {
        let (a, b) = Loopback.pair(.instant, name: "handshake")
        let honest = try Fixtures.certified(Fixtures.alice, name: "honest")
        let intruder = try Fixtures.certified(Fixtures.bob, name: "intruder", issuedBy: MeshAuthority())
        let (initiator, responder) = await Fixtures.outcomes(
            a, b, initiator: intruderInitiates ? intruder : honest, responder: intruderInitiates ? honest : intruder
        )
        let honestOutcome = intruderInitiates ? responder : initiator
        #expect(throws: HandshakeError.certificateRefused(.notSignedByAuthority(peer: "intruder"))) { try honestOutcome.get() }
        #expect(throws: HandshakeError.self) { try (intruderInitiates ? initiator : responder).get() }
        #expect(a.isClosed && b.isClosed)
    }

    @Test("an expired certificate is refused")
    func expiredCertificate() async throws {
        let (a, b) = Loopback.pair(.instant, name: "handshake")
        let expiry = Date(timeIntervalSinceNow: -60)
        let (initiator, responder) = await Fixtures.outcomes(
            a, b, initiator: try Fixtures.certified(Fixtures.alice, name: "stale", expiresAt: expiry),
            responder: try Fixtures.certified(Fixtures.bob, name: "bob")
        )
        let truncated = Date(timeIntervalSince1970: expiry.timeIntervalSince1970.rounded(.down))
        #expect(throws: HandshakeError.certificateRefused(.expired(peer: "stale", at: truncated))) { try responder.get() }
        #expect(throws: HandshakeError.self) { try initiator.get() }
    }

    @Test("a peer with a shared secret and one with a certificate are told the modes differ")
    func modeMismatch() async throws {
        let (a, b) = Loopback.pair(.instant, name: "handshake")
        let (initiator, responder) = await Fixtures.outcomes(
            a, b, initiator: Fixtures.sharedSecret(Fixtures.alice), responder: try Fixtures.certified(Fixtures.bob, name: "bob")
        )
        #expect(throws: HandshakeError.modeMismatch(local: .certificate, remote: .sharedSecret)) { try responder.get() }
        #expect(throws: HandshakeError.self) { try initiator.get() }
    }

    @Test("a certificate for another identity is refused before anything is sent")
    func ownCertificateMismatch() async throws {
        let (a, _) = Loopback.pair(.instant, name: "handshake")
        let certificate = try Fixtures.authority.issue(to: Fixtures.bob.publicKey, name: "bob", permissions: .full)
        let handshake = MeshHandshake(identity: Fixtures.alice, credential: .certificate(certificate, authority: Fixtures.authority.publicKey))
        await #expect(throws: HandshakeError.certificateNotForThisIdentity) { try await handshake.secure(a, as: .initiator) }
        #expect(a.statistics.messagesSent == 0 && a.isClosed)
    }

    @Test("a handshake whose peer never answers times out, closes the link, and the caller goes on", arguments: [HandshakeRole.initiator, .responder])
    func timeout(role: HandshakeRole) async throws {
        let (a, silent) = Loopback.pair(.instant, name: "silent")
        let limit = Duration.seconds(1)
        let clock = ContinuousClock()
        let start = clock.now
        await #expect(throws: HandshakeError.timedOut(after: limit, link: a.description)) {
            try await Fixtures.sharedSecret(Fixtures.alice, timeout: limit).secure(a, as: role)
        }
        let elapsed = clock.now - start
        #expect(elapsed >= limit && elapsed < limit * 10, "took \(elapsed)")
        #expect(a.isClosed && silent.isClosed)

        // The caller is free: a handshake with a live peer works at once.
        let (alice, bob) = try await Fixtures.securePair()
        defer { alice.close() }
        try await alice.send([1])
        #expect(try await bob.incoming.next(1) == [[1]])
    }

    @Test("random bytes in place of handshake messages are refused with an error, never a crash")
    func garbage() async throws {
        for seed in SeededRandom.seeds(count: 2, test: "handshake garbage") {
            print("handshake garbage: seed \(seed) (replay with ARCUS_TEST_SEED=\(seed))")
            var random = SeededRandom(seed: seed)
            for _ in 0..<40 {
                let (a, peer) = Loopback.pair(LoopbackConditions(mtu: 244), name: "garbage")
                let frames = (0..<Int.random(in: 1...4, using: &random)).map { _ in
                    (0..<Int.random(in: 0...244, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                }
                let role: HandshakeRole = Bool.random(using: &random) ? .initiator : .responder
                let handshake = Fixtures.sharedSecret(Fixtures.alice, timeout: .seconds(5))
                let outcome = Task { try await handshake.secure(a, as: role) }
                for frame in frames { try? await peer.send(frame) }
                peer.close()
                await #expect(throws: HandshakeError.self) { try await outcome.value }
            }
        }
    }
}
