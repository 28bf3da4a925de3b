@testable import ArcusMesh
import ArcusTestSupport
import Testing

/// The plan for a transport with few links (BLE): the cap, who goes first, and rotation.
@Suite("Scarce link budget")
struct ScarceLinkBudgetTests {
    static let start = ContinuousClock.now
    static func peer(_ n: UInt8) -> PeerID { PeerID(helloBytes: [UInt8](repeating: n, count: PeerID.size))! }
    static func at(_ seconds: Int) -> ContinuousClock.Instant { start + .seconds(seconds) }

    @Test("free slots go to the peers only this transport reaches, then the others, never past the limit")
    func fillsByNeed() {
        let budget = ScarceLinkBudget(limit: 3)
        let candidates = [
            ScarceLinkBudget.Candidate(peer: Self.peer(1), reachedOtherwise: true),
            .init(peer: Self.peer(2), reachedOtherwise: false),
            .init(peer: Self.peer(3), reachedOtherwise: true),
            .init(peer: Self.peer(4), reachedOtherwise: false),
        ]
        let linked = [ScarceLinkBudget.Linked(peer: Self.peer(9), since: Self.at(0), reachedOtherwise: false)]
        let plan = budget.plan(linked: linked, candidates: candidates, now: Self.at(1), lastRotation: Self.at(0))
        #expect(plan == ScarceLinkBudget.Plan(dial: [Self.peer(2), Self.peer(4)]))
        // A candidate already linked is not dialled again.
        let again = budget.plan(linked: linked, candidates: [.init(peer: Self.peer(9), reachedOtherwise: false)], now: Self.at(1), lastRotation: Self.at(0))
        #expect(again == ScarceLinkBudget.Plan())
    }

    @Test("over the limit (accepted links count), the least needed links go: reached otherwise first, then the oldest")
    func trimsOverLimit() {
        let budget = ScarceLinkBudget(limit: 2)
        let linked = [
            ScarceLinkBudget.Linked(peer: Self.peer(1), since: Self.at(5), reachedOtherwise: false),
            .init(peer: Self.peer(2), since: Self.at(9), reachedOtherwise: true),
            .init(peer: Self.peer(3), since: Self.at(1), reachedOtherwise: false),
            .init(peer: Self.peer(4), since: Self.at(7), reachedOtherwise: false),
        ]
        let plan = budget.plan(linked: linked, candidates: [], now: Self.at(10), lastRotation: Self.at(0))
        #expect(plan == ScarceLinkBudget.Plan(drop: [Self.peer(2), Self.peer(3)]))
    }

    @Test("when full, one link is exchanged for a waiting peer once per rotation interval, never before")
    func rotates() {
        let budget = ScarceLinkBudget(limit: 2, rotationInterval: .seconds(60))
        let linked = [
            ScarceLinkBudget.Linked(peer: Self.peer(1), since: Self.at(0), reachedOtherwise: false),
            .init(peer: Self.peer(2), since: Self.at(3), reachedOtherwise: false),
        ]
        let waiting = [ScarceLinkBudget.Candidate(peer: Self.peer(5), reachedOtherwise: false)]
        #expect(budget.plan(linked: linked, candidates: waiting, now: Self.at(59), lastRotation: Self.at(0)) == ScarceLinkBudget.Plan())
        // An island breaks up: the oldest link makes room for the peer waiting.
        let due = budget.plan(linked: linked, candidates: waiting, now: Self.at(60), lastRotation: Self.at(0))
        #expect(due == ScarceLinkBudget.Plan(dial: [Self.peer(5)], drop: [Self.peer(1)], rotates: true))
        // Nobody waiting: nothing moves, however long it has been.
        #expect(budget.plan(linked: linked, candidates: [], now: Self.at(600), lastRotation: Self.at(0)) == ScarceLinkBudget.Plan())
    }

    @Test("rotation goes to the peer linked longest ago (never linked first), so that every peer in range gets its turn")
    func rotationIsFair() {
        let budget = ScarceLinkBudget(limit: 1, rotationInterval: .seconds(10))
        let linked = [ScarceLinkBudget.Linked(peer: Self.peer(1), since: Self.at(0), reachedOtherwise: false)]
        let waiting = [
            ScarceLinkBudget.Candidate(peer: Self.peer(2), reachedOtherwise: false, lastLinked: Self.at(50)),
            .init(peer: Self.peer(3), reachedOtherwise: false, lastLinked: Self.at(20)),
            .init(peer: Self.peer(9), reachedOtherwise: false, lastLinked: nil),
        ]
        #expect(budget.plan(linked: linked, candidates: waiting, now: Self.at(60), lastRotation: Self.at(0)).dial == [Self.peer(9)])
        #expect(budget.plan(linked: linked, candidates: Array(waiting.prefix(2)), now: Self.at(60), lastRotation: Self.at(0)).dial == [Self.peer(3)])
    }

    @Test("a rotation drops a peer reached otherwise before one only this reaches, and never for a peer reached otherwise")
    func rotationSparesTheNeedy() {
        let budget = ScarceLinkBudget(limit: 2, rotationInterval: .seconds(60))
        let linked = [
            ScarceLinkBudget.Linked(peer: Self.peer(1), since: Self.at(0), reachedOtherwise: false),
            .init(peer: Self.peer(2), since: Self.at(30), reachedOtherwise: true),
        ]
        let plan = budget.plan(linked: linked, candidates: [.init(peer: Self.peer(5), reachedOtherwise: false)], now: Self.at(90), lastRotation: Self.at(0))
        #expect(plan == ScarceLinkBudget.Plan(dial: [Self.peer(5)], drop: [Self.peer(2)], rotates: true))

        let onlyHere = [
            ScarceLinkBudget.Linked(peer: Self.peer(1), since: Self.at(0), reachedOtherwise: false),
            .init(peer: Self.peer(2), since: Self.at(30), reachedOtherwise: false),
        ]
        let spared = budget.plan(linked: onlyHere, candidates: [.init(peer: Self.peer(5), reachedOtherwise: true)], now: Self.at(90), lastRotation: Self.at(0))
        #expect(spared == ScarceLinkBudget.Plan())
    }

    @Test("random situations: never past the limit, never a peer dialled twice or dialled and dropped, drops only of held links",
          arguments: SeededRandom.seeds(count: 4, test: "scarce-link-budget"))
    func invariants(seed: UInt64) {
        print("scarce-link-budget seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        for _ in 0..<500 {
            let budget = ScarceLinkBudget(limit: Int.random(in: 1...5, using: &rng), rotationInterval: .seconds(Int.random(in: 1...100, using: &rng)))
            let peers = (1...12).map { Self.peer(UInt8($0)) }.shuffled(using: &rng)
            let linkedCount = Int.random(in: 0...7, using: &rng)
            let linked = peers.prefix(linkedCount).map {
                ScarceLinkBudget.Linked(peer: $0, since: Self.at(Int.random(in: 0...100, using: &rng)), reachedOtherwise: Bool.random(using: &rng))
            }
            let candidates = peers.dropFirst(Int.random(in: 0...linkedCount, using: &rng)).prefix(Int.random(in: 0...8, using: &rng)).map {
                ScarceLinkBudget.Candidate(peer: $0, reachedOtherwise: Bool.random(using: &rng))
            }
            let plan = budget.plan(linked: linked, candidates: candidates, now: Self.at(Int.random(in: 0...200, using: &rng)), lastRotation: Self.at(0))
            let held = Set(linked.map(\.peer))
            let after = held.subtracting(plan.drop).union(plan.dial)
            #expect(after.count <= max(budget.limit, 0), "seed \(seed): \(plan) over \(budget.limit) from \(linked.count)")
            #expect(Set(plan.dial).count == plan.dial.count && Set(plan.dial).isDisjoint(with: held), "seed \(seed): \(plan)")
            #expect(Set(plan.drop).isSubset(of: held), "seed \(seed): \(plan)")
            #expect(Set(plan.dial).isSubset(of: Set(candidates.map(\.peer))), "seed \(seed): \(plan)")
        }
    }
}
