import ArcusTestSupport
import Testing
@testable import ArcusAgent
@testable import ArcusDemo

/// `arcus demo --scenario presence`, briefly: presence reports must give every peer of a chain
/// the whole chain with correct routes, and the cut must reach peer 0's graph. How fast is the
/// demo's figure; here the waits only have to end.
@Suite("Presence demo", .serialized, .timeLimit(.minutes(2)))
struct PresenceMeshDemoTests {
    @Test("a chain of 5: every peer sees every peer, peer 0 reaches the far end in 4 hops, and the cut shows",
          arguments: SeededRandom.seeds(count: 1, test: "presence-demo"))
    func chainOfFive(seed: UInt64) async throws {
        print("presence-demo seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var options = PresenceDemo.Options()
        options.peers = 5
        options.shape = .chain
        options.seconds = 2
        options.settleLimit = 30
        options.seed = seed
        let figures = try await PresenceDemo(options: options).run()
        print(figures.jsonLine)
        print(figures.afterCutLine)
        #expect(figures.routesOK)
        #expect(figures.fullViewSeconds != nil)
        #expect(figures.maxHops == 4)
        #expect(figures.reportBytes > 0)
        #expect(figures.presenceBytesPerPeer > 0)
        // The middle of four links: peers 3 and 4 fall off peer 0's side.
        #expect(figures.cutLink == "2-3")
        #expect(figures.unreachableAfterCut == 2)
        #expect(figures.afterCutSeconds != nil, "peer 0's graph never showed the cut")
    }
}
