import Testing
import ArcusTestSupport
@testable import ArcusCRDT

/// Random mutations on 3–6 replicas of a few documents; deltas are delivered in random order,
/// duplicated, dropped and re-sent. Every replica must end with the same state and JSON.
@Suite("Convergence under random delivery")
struct ConvergencePropertyTests {
    struct Replica {
        var site: SiteID
        var clock: HybridLogicalClock
        var docs: [String: DocumentState] = [:]
    }

    struct Message {
        var to: Int
        var doc: String
        var delta: DocumentState
    }

    /// One random mutation on one replica; returns the delta.
    static func mutate(_ replica: inout Replica, doc: String, _ rng: inout SeededRandom) throws -> DocumentState? {
        let stamp = Stamp(time: try replica.clock.tick(), site: replica.site)
        return RandomMutations.mutate(&replica.docs[doc, default: DocumentState()], at: stamp, &rng)
    }

    static func deliver(_ message: Message, to replicas: inout [Replica]) {
        replicas[message.to].docs[message.doc, default: DocumentState()].join(message.delta)
        replicas[message.to].clock.observe(message.delta.version.maxTime, through: .max)
    }

    @Test("replicas converge to identical state and JSON", arguments: SeededRandom.seeds(count: 40, test: "convergence"))
    func converge(seed: UInt64) throws {
        print("convergence seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let count = Int.random(in: 3...6, using: &rng)
        // Clocks with different skews, so concurrent writes order by clock, not by arrival.
        var replicas: [Replica] = (0..<count).map { i in
            let skew = UInt64.random(in: 0...50, using: &rng)
            let base = UInt64(1_700_000_000_000) + skew
            let tick = ManagedCounter()
            return Replica(site: SiteID(UInt64(i + 1) * 0x1000_0001), clock: HybridLogicalClock(physical: { base + tick.next() / 4 }))
        }
        let docs = ["d1", "d2", "d3"]
        var inFlight: [Message] = []
        var dropped: [Message] = []
        for _ in 0..<400 {
            if inFlight.isEmpty || Int.random(in: 0..<3, using: &rng) > 0 {
                let r = Int.random(in: 0..<count, using: &rng)
                let doc = docs.randomElement(using: &rng)!
                guard let delta = try Self.mutate(&replicas[r], doc: doc, &rng) else { continue }
                #expect(delta.isCovered(by: replicas[r].docs[doc]!), "a delta is part of the state it came from")
                for to in 0..<count where to != r {
                    let message = Message(to: to, doc: doc, delta: delta)
                    switch Int.random(in: 0..<10, using: &rng) {
                    case 0: dropped.append(message)
                    case 1: inFlight.append(message); inFlight.append(message)
                    default: inFlight.append(message)
                    }
                }
            } else {
                let i = Int.random(in: 0..<inFlight.count, using: &rng)
                Self.deliver(inFlight.removeSwapping(at: i), to: &replicas)
            }
        }
        // Deliver what is left in random order, then re-send what was dropped.
        inFlight.shuffle(using: &rng)
        for message in inFlight { Self.deliver(message, to: &replicas) }
        dropped.shuffle(using: &rng)
        for message in dropped { Self.deliver(message, to: &replicas) }

        for doc in docs {
            let reference = replicas[0].docs[doc]
            for r in 1..<count {
                #expect(replicas[r].docs[doc] == reference, "seed \(seed): replica \(r) state differs on \(doc)")
                #expect(replicas[r].docs[doc]?.value?.jsonString == reference?.value?.jsonString)
            }
        }
    }

    @Test("join is commutative, associative and idempotent", arguments: SeededRandom.seeds(count: 20, test: "join-laws"))
    func joinLaws(seed: UInt64) throws {
        print("join-laws seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        var replicas = (0..<3).map { i in Replica(site: SiteID(UInt64(i + 7)), clock: HybridLogicalClock(physical: { 1000 })) }
        for _ in 0..<60 {
            let r = Int.random(in: 0..<3, using: &rng)
            _ = try Self.mutate(&replicas[r], doc: "d", &rng)
        }
        let a = replicas[0].docs["d"] ?? DocumentState()
        let b = replicas[1].docs["d"] ?? DocumentState()
        let c = replicas[2].docs["d"] ?? DocumentState()
        #expect(a.joined(b) == b.joined(a))
        #expect(a.joined(b).joined(c) == a.joined(b.joined(c)))
        #expect(a.joined(a) == a)
        #expect(a.joined(b).joined(b) == a.joined(b))
    }

    /// `join` answers whether it changed the state, which the store trusts instead of comparing
    /// with a copy: it must agree with that comparison for deltas (joined in place), duplicates
    /// (no change) and whole states (the merge pass), and must tell a grown version alone.
    @Test("join says whether it changed the state", arguments: SeededRandom.seeds(count: 20, test: "join-changed"))
    func joinSaysWhetherItChanged(seed: UInt64) throws {
        print("join-changed seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        var replicas = (0..<3).map { i in Replica(site: SiteID(UInt64(i + 7)), clock: HybridLogicalClock(physical: { 1000 })) }
        var deltas: [DocumentState] = []
        var outcomes = (changed: 0, unchanged: 0)
        func check(_ target: inout DocumentState, joining other: DocumentState) {
            let before = target
            let said = target.join(other)
            #expect(said == (target != before), "seed \(seed): join said \(said), but the state \(target != before ? "changed" : "did not change")")
            if said { outcomes.changed += 1 } else { outcomes.unchanged += 1 }
        }
        for _ in 0..<300 {
            let r = Int.random(in: 0..<3, using: &rng)
            switch Int.random(in: 0..<4, using: &rng) {
            case 0, 1:
                if let delta = try Self.mutate(&replicas[r], doc: "d", &rng) { deltas.append(delta) }
            case 2 where !deltas.isEmpty:
                // A delta, maybe one this replica has already had.
                check(&replicas[r].docs["d", default: DocumentState()], joining: deltas.randomElement(using: &rng)!)
            default:
                let from = Int.random(in: 0..<3, using: &rng)
                check(&replicas[r].docs["d", default: DocumentState()], joining: replicas[from].docs["d"] ?? DocumentState())
            }
        }
        var versionOnly = replicas[0].docs["d"] ?? DocumentState()
        check(&versionOnly, joining: DocumentState(version: VersionVector(Stamp(time: Timestamp(rawValue: 1 << 60), site: SiteID(99)))))
        #expect(outcomes.changed > 0 && outcomes.unchanged > 0, "seed \(seed): both outcomes are exercised (\(outcomes))")
    }
}

/// A counter the fake physical clocks share; reference type so the closure can be `@Sendable`.
final class ManagedCounter: @unchecked Sendable {
    // Only ever used from one test task at a time.
    private var value: UInt64 = 0
    func next() -> UInt64 {
        value += 1
        return value
    }
}

extension Array {
    /// Removes element `i` in O(1) by swapping the last one into its place.
    fileprivate mutating func removeSwapping(at i: Int) -> Element {
        swapAt(i, count - 1)
        return removeLast()
    }
}

extension DocumentState {
    /// Whether joining `self` into `other` changes nothing.
    func isCovered(by other: DocumentState) -> Bool { other.joined(self) == other }
}
