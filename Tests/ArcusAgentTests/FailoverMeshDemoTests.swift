import ArcusTestSupport
import Testing
@testable import ArcusAgent
@testable import ArcusDemo

/// `arcus demo --scenario failover`, briefly: the fast link is cut and comes back while both
/// peers send; nothing may be lost or repeated, and traffic must move. Its speed is the demo's
/// figure, asserted here only with ten times the goal's headroom.
@Suite("Failover demo", .serialized, .timeLimit(.minutes(2)))
struct FailoverMeshDemoTests {
    @Test("a short failover run loses and repeats nothing, and traffic resumes on the slow link",
          arguments: SeededRandom.seeds(count: 1, test: "failover-demo"))
    func shortRun(seed: UInt64) async throws {
        print("failover-demo seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var options = FailoverDemo.Options()
        options.seconds = 4
        options.seed = seed
        let figures = try await FailoverDemo(options: options).run()
        print(figures.jsonLine)
        #expect(figures.lost == 0)
        #expect(figures.duplicated == 0)
        #expect(figures.reordered == 0)
        #expect(figures.messages > 0)
        let switchSeconds = try #require(figures.switchSeconds, "traffic never resumed after the cut")
        #expect(switchSeconds < 10)
    }
}
