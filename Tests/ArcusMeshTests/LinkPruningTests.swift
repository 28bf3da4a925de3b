@testable import ArcusMesh
import ArcusTestSupport
import Testing

/// The plan for a crowd: which of the links peers hear carry sessions.
@Suite("Link pruning")
struct LinkPruningTests {
    /// A connected random graph: a random spanning tree, then random links up to a mean degree.
    static func crowd(peers: Int, degree: Int, seed: UInt64) -> [(a: Int, b: Int)] {
        var random = SeededRandom(seed: seed)
        var set = Set<[Int]>()
        for i in 1..<peers { set.insert([Int.random(in: 0..<i, using: &random), i]) }
        while set.count < peers * degree / 2 {
            let a = Int.random(in: 0..<peers, using: &random), b = Int.random(in: 0..<peers, using: &random)
            if a != b { set.insert([min(a, b), max(a, b)]) }
        }
        return set.sorted { ($0[0], $0[1]) < ($1[0], $1[1]) }.map { (a: $0[0], b: $0[1]) }
    }

    static func degrees(_ links: [(a: Int, b: Int)], peers: Int) -> [Int] {
        var degrees = Array(repeating: 0, count: peers)
        for link in links {
            degrees[link.a] += 1
            degrees[link.b] += 1
        }
        return degrees
    }

    static func isConnected(_ links: [(a: Int, b: Int)], peers: Int) -> Bool {
        var neighbours = Array(repeating: [Int](), count: peers)
        for link in links {
            neighbours[link.a].append(link.b)
            neighbours[link.b].append(link.a)
        }
        var seen: Set<Int> = [0], queue = [0]
        while let peer = queue.popLast() {
            for next in neighbours[peer] where seen.insert(next).inserted { queue.append(next) }
        }
        return seen.count == peers
    }

    @Test("in a crowd (128 peers, each hearing about 20) every peer keeps at most the limit, most keep it, and the mesh stays connected",
          arguments: SeededRandom.seeds(count: 3, test: "link-pruning-crowd"))
    func crowdWithinBudget(seed: UInt64) {
        print("link-pruning-crowd seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        let heard = Self.crowd(peers: 128, degree: 20, seed: seed)
        var random = SeededRandom(seed: seed)
        let kept = LinkPruning(limit: 4).kept(heard, peers: 128, using: &random).map { heard[$0] }
        let degrees = Self.degrees(kept, peers: 128)
        #expect(degrees.max()! <= 4, "seed \(seed)")
        #expect(Self.isConnected(kept, peers: 128), "seed \(seed)")
        // Not starved: peers fill their budget, about four links each (twice the links of a tree).
        #expect(kept.count >= 128 * 3 / 2, "seed \(seed): \(kept.count) links kept")
    }

    @Test("a peer that hears no more than the limit keeps every link it hears")
    func sparseKeepsAll() {
        let ring = (0..<12).map { (a: min($0, ($0 + 1) % 12), b: max($0, ($0 + 1) % 12)) }
        var random = SeededRandom(seed: 1)
        #expect(LinkPruning(limit: 4).kept(ring, peers: 12, using: &random) == Array(ring.indices))
    }

    @Test("connectivity before the budget: a hub keeps every leaf that only it hears")
    func hubKeepsItsLeaves() {
        let star = (1..<10).map { (a: 0, b: $0) }
        var random = SeededRandom(seed: 2)
        #expect(LinkPruning(limit: 3).kept(star, peers: 10, using: &random).count == 9)
    }

    @Test("the same seed gives the same plan")
    func replayable() {
        let heard = Self.crowd(peers: 40, degree: 12, seed: 9)
        var first = SeededRandom(seed: 5), second = SeededRandom(seed: 5)
        #expect(LinkPruning().kept(heard, peers: 40, using: &first) == LinkPruning().kept(heard, peers: 40, using: &second))
    }
}
