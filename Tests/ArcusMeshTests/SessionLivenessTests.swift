import ArcusLoopback
import ArcusMesh
import ArcusTransportConformance
import Testing

/// What keeps a link alive in a session's eyes, and what a restarted peer does to a session.
@Suite("Session liveness and restarts", .serialized, .timeLimit(.minutes(1)))
struct SessionLivenessTests {
    @Test("a message that takes seconds to cross a slow link does not make the link look dead")
    func slowLargeMessage() async throws {
        // The default heartbeats: dead after 0.75 s of silence.
        let peers = SessionTestPeers(configuration: SessionConfiguration())
        // 40 kB at 20 kB/s: two seconds of fragments, eight heartbeat intervals without a whole frame.
        try await peers.link(.ble, kind: .bluetooth)
        let sender = await peers.alphaSession, receiver = await peers.bravoSession
        let message = testMessage(1, size: 40_000)
        try await sender.send(message)
        #expect(try await receiver.incoming.next(1, within: .seconds(20)) == [message])
        #expect(await sender.linkStatuses.count == 1, "the link was declared dead while it carried the message")
        #expect(await receiver.linkStatuses.count == 1)
        await peers.close()
    }

    @Test("a peer that restarts (new incarnation) starts both directions afresh, and nothing is dropped as a duplicate")
    func peerRestart() async throws {
        let bravo = Multiplexer(localPeer: .bravo, configuration: SessionTestPeers.quickConfiguration)
        let before = Multiplexer(localPeer: .alpha, configuration: SessionTestPeers.quickConfiguration)
        func link(_ alpha: Multiplexer) async throws {
            let (a, b) = Loopback.pair(.instant, name: "restart", kind: .lan)
            async let alphaSide = alpha.add(a, as: .dialer)
            async let bravoSide = bravo.add(b, as: .acceptor)
            _ = try await (alphaSide, bravoSide)
        }
        try await link(before)
        let bravoSession = await bravo.session(with: .alpha)
        for index in 0..<3 { try await before.session(with: .bravo).send([UInt8(index)]) }
        #expect(try await bravoSession.incoming.next(3) == [[0], [1], [2]])

        await before.close()
        let after = Multiplexer(localPeer: .alpha, configuration: SessionTestPeers.quickConfiguration)
        try await link(after)
        let alphaSession = await after.session(with: .bravo)
        try await alphaSession.send([42])
        #expect(try await bravoSession.incoming.next(1) == [[42]], "the restarted peer's first message was taken for a duplicate")
        try await bravoSession.send([7])
        #expect(try await alphaSession.incoming.next(1) == [[7]])
        await after.close()
        await bravo.close()
    }

    @Test("a conversation lasts one life of the peer: its restart ends it, what it left unacknowledged is dropped, and the next begins afresh")
    func conversationPerLife() async throws {
        let bravo = Multiplexer(localPeer: .bravo, configuration: SessionTestPeers.quickConfiguration)
        func link(_ alpha: Multiplexer) async throws {
            let (a, b) = Loopback.pair(.instant, name: "restart", kind: .lan)
            async let alphaSide = alpha.add(a, as: .dialer)
            async let bravoSide = bravo.add(b, as: .acceptor)
            _ = try await (alphaSide, bravoSide)
        }
        let before = Multiplexer(localPeer: .alpha, configuration: SessionTestPeers.quickConfiguration)
        try await link(before)
        let bravoSession = await bravo.session(with: .alpha)
        let first = try #require(await bravoSession.conversation(after: nil))
        #expect(first.generation == 0)
        try await before.session(with: .bravo).send([1])
        #expect(try await first.incoming.next(1) == [[1]])

        // The peer dies; bravo says something in the old conversation that nobody will acknowledge.
        await before.close()
        try await first.send([9])
        let after = Multiplexer(localPeer: .alpha, configuration: SessionTestPeers.quickConfiguration)
        try await link(after)
        #expect(try await first.incoming.remaining(within: .seconds(10)) == [], "the old conversation did not end with the peer's life")
        await #expect(throws: LinkError.closed) { try await first.send([10]) }

        let second = try #require(await bravoSession.conversation(after: first.generation))
        #expect(second.generation == 1)
        let alphaSession = await after.session(with: .bravo)
        try await second.send([7])
        #expect(try await alphaSession.incoming.next(1) == [[7]], "the restarted peer got a message of its earlier life")
        try await alphaSession.send([42])
        #expect(try await second.incoming.next(1) == [[42]])

        // Ending a conversation from this side leaves the session and its links to others.
        await second.end()
        #expect(try await second.incoming.remaining(within: .seconds(10)) == [])
        try await alphaSession.send([43])
        #expect(await bravoSession.linkStatuses.count == 1)
        await after.close()
        await bravo.close()
        #expect(await bravoSession.conversation(after: second.generation)?.generation == nil)
    }
}
