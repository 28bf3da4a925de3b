import ArcusLoopback
import ArcusTestSupport
import ArcusTransportConformance
import Testing
@testable import ArcusMesh

/// Both peers dial each other on one transport at once. Exactly one link must survive on both
/// sides, the same one, also when one side's dial fails — above all when the peer the tie-break
/// favours is the one that failed (Origami74/myco issue 14).
@Suite("Simultaneous dials", .serialized, .timeLimit(.minutes(1)))
struct SimultaneousDialTests {
    /// Alpha dials bravo and bravo dials alpha, each on its own pair, all four ends added at once.
    /// `failing` names the peer whose dial dies before its hello gets through.
    private func dialBothWays(failing: PeerID?, delays: (Duration, Duration) = (.zero, .zero)) async throws -> (alpha: [SessionLinkStatus], bravo: [SessionLinkStatus]) {
        let peers = SessionTestPeers()
        let (alphaDials, bravoAccepts) = Loopback.pair(.lan, name: "alpha's dial", kind: .lan)
        let (bravoDials, alphaAccepts) = Loopback.pair(.lan, name: "bravo's dial", kind: .lan)
        if failing == .alpha { alphaDials.close() }
        if failing == .bravo { bravoDials.close() }
        async let a1: Void = { try? await Task.sleep(for: delays.0); _ = try? await peers.alpha.add(alphaDials, as: .dialer) }()
        async let b1: Void = { _ = try? await peers.bravo.add(bravoAccepts, as: .acceptor) }()
        async let b2: Void = { try? await Task.sleep(for: delays.1); _ = try? await peers.bravo.add(bravoDials, as: .dialer) }()
        async let a2: Void = { _ = try? await peers.alpha.add(alphaAccepts, as: .acceptor) }()
        _ = await (a1, b1, b2, a2)
        let alpha = await peers.alphaSession, bravo = await peers.bravoSession
        try await eventually("one link on each side") { let first = await alpha.linkStatuses.count; let second = await bravo.linkStatuses.count; return first == 1 && second == 1 }
        // Whatever was going to be closed has been by now; nothing flaps back.
        try await Task.sleep(for: .milliseconds(100))
        let result = (await alpha.linkStatuses, await bravo.linkStatuses)

        // The survivor carries messages both ways.
        try await alpha.send([1, 2, 3])
        try await bravo.send([4, 5])
        #expect(try await bravo.incoming.next(1) == [[1, 2, 3]])
        #expect(try await alpha.incoming.next(1) == [[4, 5]])
        await peers.close()
        return result
    }

    @Test("both dials succeed: the link the smaller id dialled survives, on both sides", arguments: [
        (Duration.zero, Duration.zero), (.milliseconds(5), .zero), (.zero, .milliseconds(5)),
    ])
    func bothSucceed(delays: (Duration, Duration)) async throws {
        let (alpha, bravo) = try await dialBothWays(failing: nil, delays: delays)
        #expect(alpha.map(\.dialer) == [.alpha])
        #expect(bravo.map(\.dialer) == [.alpha])
    }

    @Test("the smaller id's dial fails: the larger id's link survives instead of nobody's")
    func smallerSideFails() async throws {
        let (alpha, bravo) = try await dialBothWays(failing: .alpha)
        #expect(alpha.map(\.dialer) == [.bravo])
        #expect(bravo.map(\.dialer) == [.bravo])
    }

    @Test("the larger id's dial fails: the smaller id's link survives")
    func largerSideFails() async throws {
        let (alpha, bravo) = try await dialBothWays(failing: .bravo)
        #expect(alpha.map(\.dialer) == [.alpha])
        #expect(bravo.map(\.dialer) == [.alpha])
    }

    @Test("a redial that loses the tie-break to a link gone silent is kept, and takes over when the silent one dies")
    func redialAfterSilentCut() async throws {
        let peers = SessionTestPeers(configuration: SessionConfiguration())
        let old = try await peers.severableLink(.lan, kind: .lan)
        let alpha = await peers.alphaSession, bravo = await peers.bravoSession
        old.alpha.sever()
        // Bravo redials at once; alpha's dial (the old link) would win the tie-break if it were alive.
        try await peers.link(.lan, kind: .lan, dialer: .bravo, name: "redial")
        try await alpha.send([1])
        try await bravo.send([2])
        #expect(try await bravo.incoming.next(1, within: .seconds(30)) == [[1]])
        #expect(try await alpha.incoming.next(1, within: .seconds(30)) == [[2]])
        try await eventually("only the redial is left") {
            let a = await alpha.linkStatuses.map(\.dialer), b = await bravo.linkStatuses.map(\.dialer)
            return a == [.bravo] && b == [.bravo]
        }
        await peers.close()
    }

    @Test("the tie-break is a total order both ends compute alike")
    func tieBreak() {
        #expect(PeerSession.survives(dialer: .alpha, dialID: 1, against: .bravo, 9))
        #expect(!PeerSession.survives(dialer: .bravo, dialID: 9, against: .alpha, 1))
        #expect(PeerSession.survives(dialer: .alpha, dialID: 2, against: .alpha, 1), "a redial replaces the older link")
        #expect(!PeerSession.survives(dialer: .alpha, dialID: 1, against: .alpha, 2))
    }

    @Test("links of different transports to one peer all stay: they are standbys, not duplicates")
    func differentKindsStay() async throws {
        let peers = SessionTestPeers()
        try await peers.link(.lan, kind: .lan)
        try await peers.link(.lan, kind: .bluetooth, dialer: .bravo)
        try await peers.link(.lan, kind: .cloud)
        let alpha = await peers.alphaSession, bravo = await peers.bravoSession
        try await eventually("three links") { let first = await alpha.linkStatuses.count; let second = await bravo.linkStatuses.count; return first == 3 && second == 3 }
        #expect(await alpha.activeLink?.kind == .lan)
        await peers.close()
    }
}
