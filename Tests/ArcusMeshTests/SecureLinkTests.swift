import ArcusLoopback
import ArcusMesh
import ArcusTransportConformance
import Testing

@Suite("Secure link", .timeLimit(.minutes(1)))
struct SecureLinkTests {
    typealias Fixtures = SecurityFixtures

    /// A session whose initiator's frames pass through a tap, so the test can take them out.
    struct TappedSession {
        let tap: FrameTap
        let raw: LoopbackLink
        let receiverRaw: LoopbackLink
        let sender: SecureLink
        let receiver: SecureLink

        init() async throws {
            let (a, b) = Loopback.pair(.instant, name: "tapped")
            tap = FrameTap(a)
            raw = a
            receiverRaw = b
            let pair = try await Fixtures.secure(tap, b, initiator: Fixtures.sharedSecret(Fixtures.alice), responder: Fixtures.sharedSecret(Fixtures.bob))
            sender = pair.0
            receiver = pair.1
        }

        /// Seals `message` as the sender would send it next, without sending it.
        func sealWithoutSending(_ message: [UInt8]) async throws -> [UInt8] {
            tap.isForwarding = false
            defer { tap.isForwarding = true }
            try await sender.send(message)
            return try #require(tap.frames.last)
        }

        /// Sends `message`, and checks it arrived; returns the frame that carried it.
        func deliver(_ message: [UInt8]) async throws -> [UInt8] {
            try await sender.send(message)
            #expect(try await receiver.incoming.next(1) == [message])
            return try #require(tap.frames.last)
        }

        /// The receiver delivers nothing more, has closed the link, and says why.
        func expectClosed(at counter: UInt64) async throws {
            #expect(try await receiver.incoming.remaining().isEmpty)
            #expect(receiver.securityViolation?.counterIfAuthentication == counter)
            #expect(receiverRaw.isClosed && raw.isClosed)
            await #expect(throws: LinkError.closed) { try await sender.send([1]) }
        }
    }

    @Test("sealing costs 16 bytes a message, and the peer reads only ciphertext on the link")
    func overhead() async throws {
        let session = try await TappedSession()
        defer { session.sender.close() }
        #expect(session.sender.mtu == LoopbackConditions.instant.mtu - 16)
        let message = Array(repeating: UInt8(0x41), count: 100)
        let frame = try await session.deliver(message)
        #expect(frame.count == 116)
        #expect(!frame.starts(with: message.prefix(8)), "the message went out in clear")
    }

    @Test("a tampered frame closes the link and records a security violation")
    func tampered() async throws {
        let session = try await TappedSession()
        _ = try await session.deliver([1, 2, 3])
        var frame = try await session.sealWithoutSending([4, 5, 6])
        frame[1] ^= 0x01
        try await session.raw.send(frame)
        try await session.expectClosed(at: 1)
    }

    @Test("a replayed frame closes the link")
    func replayed() async throws {
        let session = try await TappedSession()
        let frame = try await session.deliver([1, 2, 3])
        try await session.raw.send(frame)
        try await session.expectClosed(at: 1)
    }

    @Test("reordered frames close the link before either is delivered")
    func reordered() async throws {
        let session = try await TappedSession()
        let first = try await session.sealWithoutSending([1])
        let second = try await session.sealWithoutSending([2])
        try await session.raw.send(second)
        try await session.raw.send(first)
        try await session.expectClosed(at: 0)
    }

    @Test("a frame from another session between the same peers closes the link")
    func otherSession() async throws {
        let session = try await TappedSession(), other = try await TappedSession()
        defer { other.sender.close() }
        // Both at frame #0: only the keys differ.
        let foreign = try await other.sealWithoutSending([7, 7, 7])
        try await session.raw.send(foreign)
        try await session.expectClosed(at: 0)
    }

    @Test("a frame shorter than a tag closes the link")
    func truncated() async throws {
        let session = try await TappedSession()
        try await session.raw.send([1, 2, 3])
        try await session.expectClosed(at: 0)
    }
}

extension SecurityViolation {
    var counterIfAuthentication: UInt64? {
        if case .frameFailedAuthentication(let counter, _) = self { return counter }
        return nil
    }
}
