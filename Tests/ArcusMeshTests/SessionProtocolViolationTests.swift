import ArcusLoopback
import ArcusTransportConformance
import Testing
@testable import ArcusMesh

/// A peer that breaks the session protocol loses the link it broke it on, with a reason a person
/// can act on; nothing crashes and nothing it announced is allocated before it is checked.
@Suite("Session protocol violations", .serialized, .timeLimit(.minutes(1)))
struct SessionProtocolViolationTests {
    private static func hello(_ peer: PeerID = .mallory, role: LinkRole = .dialer, window: Int = 64) -> [UInt8] {
        SessionFrame.hello(LinkHello(peer: peer, incarnation: 7, role: role, dialID: 1, receiveWindow: window)).encoded()
    }

    /// The hand-driven peer sends no heartbeats: a busy machine must not see its silence first.
    private static func patientBravo() -> Multiplexer {
        var configuration = SessionConfiguration()
        configuration.heartbeatInterval = .seconds(60)
        return Multiplexer(localPeer: .bravo, configuration: configuration)
    }

    /// Bravo's multiplexer accepts a link whose other end the test drives by hand, through a
    /// message channel, as a misbehaving peer would.
    private static func handDrivenLink(_ bravo: Multiplexer) async throws -> (MessageChannel, Task<PeerSession, any Error>) {
        let (ours, theirs) = Loopback.pair(.instant, name: "hand-driven")
        let channel = MessageChannel(ours, maximumMessageSize: bravo.configuration.maximumMessageSize + SessionFrame.dataOverhead)
        let admission = Task { try await bravo.add(theirs, as: .acceptor) }
        return (channel, admission)
    }

    /// Says hello, then sends `frame`; returns why the session dropped the link.
    private func removalAfterHello(then frame: [UInt8]) async throws -> LinkRemoval? {
        let bravo = Self.patientBravo()
        let (channel, admission) = try await Self.handDrivenLink(bravo)
        try await channel.send(Self.hello())
        let session = try await admission.value
        try await eventually("the link is bound") { await session.linkStatuses.count == 1 }
        try await channel.send(frame)
        var removal: LinkRemoval?
        for await event in session.events {
            if case .linkRemoved(_, let reason) = event { removal = reason; break }
        }
        // The link is closed: what the misbehaving peer reads ends.
        _ = try await channel.incoming.remaining()
        await bravo.close()
        return removal
    }

    @Test("an unknown frame type closes the link with that reason")
    func unknownType() async throws {
        #expect(try await removalAfterHello(then: [0x7F, 1, 2]) == .peerViolation(.unknownType(0x7F)))
    }

    @Test("a truncated data frame closes the link")
    func truncatedData() async throws {
        #expect(try await removalAfterHello(then: [0x02, 0x81]) == .peerViolation(.truncated(frame: "data")))
    }

    @Test("an ack for a message never sent closes the link")
    func ackBeyondSent() async throws {
        #expect(try await removalAfterHello(then: SessionFrame.ack(5).encoded()) == .peerViolation(.ackBeyondSent(ack: 5, sent: 0)))
    }

    @Test("a data frame far beyond the announced window closes the link before anything is buffered")
    func beyondWindow() async throws {
        let frame = SessionFrame.data(sequence: 1_000_000, ack: 0, payload: [1]).encoded()
        #expect(try await removalAfterHello(then: frame) == .peerViolation(.beyondWindow(sequence: 1_000_000, limit: 64)))
    }

    @Test("a second hello, and trailing bytes, are violations too")
    func repeatedHelloAndTrailingBytes() async throws {
        #expect(try await removalAfterHello(then: Self.hello()) == .peerViolation(.repeatedHello))
        #expect(try await removalAfterHello(then: [0x03, 1, 0]) == .peerViolation(.trailingBytes(frame: "ack", count: 1)))
    }

    @Test("a fragment that announces a message over the limit closes the link before it is buffered")
    func oversizeFragment() async throws {
        let bravo = Self.patientBravo()
        let (ours, theirs) = Loopback.pair(.instant, name: "hand-driven")
        let admission = Task { try await bravo.add(theirs, as: .acceptor) }
        let helloBytes = Self.hello()
        try await ours.send([0x01] + helloBytes)
        let session = try await admission.value
        try await eventually("the link is bound") { await session.linkStatuses.count == 1 }
        // first + more, a length of 2^40 bytes.
        try await ours.send([0x03, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0])
        var removal: LinkRemoval?
        for await event in session.events {
            if case .linkRemoved(_, let reason) = event { removal = reason; break }
        }
        guard case .fragmentViolation(.messageTooLarge)? = removal else {
            Issue.record("expected a fragment violation, got \(String(describing: removal))")
            return
        }
        await bravo.close()
    }

    @Test("a malformed or contradictory hello refuses the link before any session sees it", arguments: [
        ([0x01, 9] as [UInt8], "a hello of another version"),
        ([0x02, 1, 0], "data before the hello"),
        ([0x01, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 64, 1, 2], "a hello cut short inside the peer id"),
        ([0x01, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 64] + [UInt8](repeating: 1, count: 17), "a hello with a byte after the peer id"),
        ([0x01, 1, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 7, 64] + [UInt8](repeating: 1, count: 16), "a hello with an unknown role"),
        ([], "an empty frame"),
    ])
    func badHello(frame: [UInt8], what: String) async throws {
        let bravo = Multiplexer(localPeer: .bravo)
        let (channel, admission) = try await Self.handDrivenLink(bravo)
        try await channel.send(frame)
        await #expect(throws: LinkAdmissionError.self, "\(what)") { _ = try await admission.value }
        await bravo.close()
    }

    @Test("both ends claiming to have dialled, or a peer using our own id, is refused")
    func roleConflictAndSelfLink() async throws {
        for (hello, expected) in [
            (Self.hello(role: .acceptor), SessionFrameError.roleConflict),
            (Self.hello(.bravo), SessionFrameError.selfLink),
        ] {
            let bravo = Multiplexer(localPeer: .bravo)
            let (channel, admission) = try await Self.handDrivenLink(bravo)
            try await channel.send(hello)
            do {
                _ = try await admission.value
                Issue.record("the link was admitted")
            } catch let error as LinkAdmissionError {
                guard case .peerViolation(_, let reason) = error else { Issue.record("\(error)"); continue }
                #expect(reason == expected)
                print("refused: \(error)")
            }
            await bravo.close()
        }
    }

    @Test("a peer that never says hello is cut off after the hello timeout, and the multiplexer goes on")
    func helloTimeout() async throws {
        var configuration = SessionConfiguration()
        configuration.helloTimeout = .milliseconds(200)
        let bravo = Multiplexer(localPeer: .bravo, configuration: configuration)
        let (_, admission) = try await Self.handDrivenLink(bravo)
        do {
            _ = try await admission.value
            Issue.record("a silent link was admitted")
        } catch let error as LinkAdmissionError {
            guard case .helloTimedOut = error else { Issue.record("\(error)"); return }
        }
        await bravo.close()
    }
}
