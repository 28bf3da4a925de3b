import ArcusLoopback
import ArcusMesh
import ArcusTestSupport
import Testing

/// Links cut, closed and restored at random while both peers send: whatever happens underneath,
/// each direction delivers every message once and in order.
@Suite("Session under flapping links", .serialized, .timeLimit(.minutes(2)))
struct SessionFlappingLinksTests {
    @Test("random cuts, closes and restores of a LAN and a BLE link under sends both ways: every message once, in order",
          arguments: SeededRandom.seeds(count: 2, test: "session flapping links"))
    func flappingLinks(seed: UInt64) async throws {
        print("session flapping links: seed \(seed) (replay with ARCUS_TEST_SEED=\(seed))")
        var random = SeededRandom(seed: seed)
        let peers = SessionTestPeers(configuration: SessionConfiguration())
        let alpha = await peers.alphaSession, bravo = await peers.bravoSession
        let kinds: [LinkKind] = [.lan, .bluetooth]
        func open(_ kind: LinkKind, random: inout SeededRandom) async throws -> SeverableLink {
            let conditions: LoopbackConditions = kind == .lan ? .lan : LoopbackConditions.ble.accelerated(by: 4)
            // Either peer may dial.
            let (a, b) = Loopback.severablePair(conditions, name: "\(kind)", kind: kind)
            let alphaDials = Bool.random(using: &random)
            async let alphaSide = peers.alpha.add(a, as: alphaDials ? .dialer : .acceptor)
            async let bravoSide = peers.bravo.add(b, as: alphaDials ? .acceptor : .dialer)
            _ = try await (alphaSide, bravoSide)
            return a
        }
        var links: [LinkKind: SeverableLink] = [:]
        for kind in kinds { links[kind] = try await open(kind, random: &random) }

        let count = 800
        let paddingSeed = random.next()
        let alphaToBravo = Arrivals(), bravoToAlpha = Arrivals()
        let consumers = [
            Task { for await message in bravo.incoming { alphaToBravo.record(message) } },
            Task { for await message in alpha.incoming { bravoToAlpha.record(message) } },
        ]
        let writers = [(alpha, paddingSeed), (bravo, paddingSeed ^ 1)].map { session, seed in
            Task {
                var random = SeededRandom(seed: seed)
                for index in 0..<count {
                    try await session.send(numberedMessage(index, padding: Int.random(in: 0...400, using: &random)))
                    try await Task.sleep(for: .milliseconds(3))
                }
            }
        }

        // Flap for about as long as the writers write.
        var actions: [String] = []
        for _ in 0..<6 {
            try await Task.sleep(for: .milliseconds(Int64.random(in: 150...600, using: &random)))
            let kind = kinds.randomElement(using: &random)!
            switch (links[kind], Int.random(in: 0..<3, using: &random)) {
            case (let link?, 0):
                link.sever()
                links[kind] = nil
                actions.append("sever \(kind)")
            case (let link?, 1):
                link.close()
                links[kind] = nil
                actions.append("close \(kind)")
            case (nil, _):
                links[kind] = try await open(kind, random: &random)
                actions.append("open \(kind)")
            default:
                actions.append("keep \(kind)")
            }
        }
        for kind in kinds where links[kind] == nil { links[kind] = try await open(kind, random: &random) }
        print("session flapping links: \(actions.joined(separator: ", "))")

        for writer in writers { try await writer.value }
        try await eventually("every message arrives both ways", within: .seconds(30)) {
            alphaToBravo.count >= count && bravoToAlpha.count >= count
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(alphaToBravo.indices == Array(0..<count), "alpha → bravo: lost, duplicated, reordered or corrupted")
        #expect(bravoToAlpha.indices == Array(0..<count), "bravo → alpha: lost, duplicated, reordered or corrupted")
        for consumer in consumers { consumer.cancel() }
        await peers.close()
    }
}
