import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Testing

/// Stores in a random mesh, written to at random while their sessions are cut and reconnected
/// at random, all end with the same documents.
@Suite("Convergence")
struct ConvergenceTests {
    @Test("random writes on a random mesh with sessions cut and reconnected converge",
          arguments: SeededRandom.seeds(count: 4, test: "sync-convergence"))
    func converge(seed: UInt64) async throws {
        print("sync-convergence seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let count = Int.random(in: 4...6, using: &rng)
        let peers = try (0..<count).map { i in
            try Peer("p\(i)", batchSize: Int.random(in: 3...40, using: &rng))
        }
        // Everyone wants the items, some through a subscription to the whole store.
        for peer in peers {
            _ = try peer.subscribe(Bool.random(using: &rng) ? "SELECT * FROM items" : "")
        }
        // A random spanning tree, and a few more links.
        var edges: [(Int, Int)] = []
        for i in 1..<count { edges.append((Int.random(in: 0..<i, using: &rng), i)) }
        for _ in 0..<Int.random(in: 0...count, using: &rng) {
            let a = Int.random(in: 0..<count, using: &rng), b = Int.random(in: 0..<count, using: &rng)
            if a != b, !edges.contains(where: { Set([$0.0, $0.1]) == Set([a, b]) }) { edges.append((a, b)) }
        }
        print("sync-convergence: \(count) peers, links \(edges)")
        var links: [Connection?] = edges.map { connect(peers[$0.0], peers[$0.1]) }

        let keys = (0..<15).map { DocumentKey("items", "item\($0)") }
        var actions: [String] = []
        for step in 0..<250 {
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<70:
                let peer = peers.randomElement(using: &rng)!
                let key = keys.randomElement(using: &rng)!
                try peer.store.write { tx in
                    try tx.apply(key) { state, stamp in RandomMutations.mutate(&state, at: stamp, &rng) }
                }
                actions.append("\(step): \(peer.engine.options.name) writes \(key)")
            case 70..<82:
                let index = Int.random(in: 0..<links.count, using: &rng)
                if let link = links[index] {
                    link.close()
                    links[index] = nil
                    actions.append("\(step): cut \(edges[index])")
                }
            case 82..<94:
                let index = Int.random(in: 0..<links.count, using: &rng)
                if links[index] == nil {
                    links[index] = connect(peers[edges[index].0], peers[edges[index].1])
                    actions.append("\(step): connect \(edges[index])")
                }
            default:
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...20, using: &rng)))
            }
            if step % 5 == 0 { try await Task.sleep(for: .milliseconds(1)) }
        }
        for index in links.indices where links[index] == nil {
            links[index] = connect(peers[edges[index].0], peers[edges[index].1])
        }
        for link in links { #expect(await link!.caughtUp()) }
        let converged = try await eventually {
            let reference = try contents(peers[0].store, "items")
            return try peers.dropFirst().allSatisfy { try contents($0.store, "items") == reference }
        }
        #expect(converged, "seed \(seed)")
        if !converged {
            for action in actions { print(action) }
            for peer in peers { print("\(peer.engine.options.name) is site \(peer.store.site)") }
            for key in keys {
                let states = try peers.map { try $0.store.loggedDocuments([key]).first }
                let values = states.map { $0?.value?.jsonString }
                guard Set(values).count > 1 else { continue }
                print("\(key) differs:")
                for (peer, state) in zip(peers, states) {
                    var events: [String] = []
                    state?.state.forEachEvent { events.append("\($0)") }
                    print("  \(peer.engine.options.name) seq \(state?.sequence ?? -1) version \(state?.state.version.description ?? "-") events \(Set(events).sorted())")
                }
            }
            for peer in peers {
                for line in peer.log.all { print("  \(peer.engine.options.name) log: \(line.0) \(line.1)") }
            }
        }
        for peer in peers { peer.engine.stop() }
    }
}
