import ArcusCRDT
import ArcusCodec
import ArcusStore
import ArcusSync
import ArcusTestSupport
import Foundation
import Testing
@testable import ArcusSync

/// Lazy push (issue 20): where sessions close a cycle, a peer asks the neighbours that hand it
/// changes it already has to hold them and send only what it still lacks, so each change
/// reaches it once; a held link still delivers when the eager path stops.
@Suite("Lazy push")
struct LazyPushTests {
    /// Three peers, each connected to the other two, all subscribed to orders.
    static func triangle(hold: Duration = SyncEngine.Options.lazyPushDefaultHold) throws -> (peers: [Peer], links: [(Int, Int, Connection)]) {
        let peers = try (0..<3).map { try Peer("tri\($0)", lazyPushHold: hold) }
        for peer in peers { _ = try peer.subscribe("SELECT * FROM orders") }
        let links = [(0, 1), (1, 2), (0, 2)].map { ($0.0, $0.1, connect(peers[$0.0], peers[$0.1])) }
        return (peers, links)
    }

    /// Writes order `n` at `peer` and waits until every peer has it.
    static func write(_ n: Int, at peer: Peer, reaching peers: [Peer]) async throws -> Bool {
        try peer.store.insertOrders(n..<n + 1)
        return try await eventually { try peers.allSatisfy { try ids($0.store, "orders").count == n + 1 } }
    }

    @Test("in a triangle, once the sessions have settled, every write reaches each other peer once: no duplicate deliveries")
    func triangleDeliversOnce() async throws {
        // A hold far longer than a hop takes even on a loaded machine (the test asserts that
        // the eager path wins; with 200 ms, a CI run under load saw held copies go first).
        let hold: Duration = .seconds(2)
        let (peers, links) = try Self.triangle(hold: hold)
        for (_, _, link) in links { #expect(await link.caughtUp()) }
        // The first writes teach each peer which neighbour hands it changes second.
        for n in 0..<6 { #expect(try await Self.write(n, at: peers[n % 3], reaching: peers)) }
        try await Task.sleep(for: hold + .milliseconds(500))
        let before = peers.map(\.engine.deliveries)
        for n in 6..<18 {
            #expect(try await Self.write(n, at: peers[n % 3], reaching: peers))
            try await Task.sleep(for: .milliseconds(100))
        }
        // Past the last hold: a held copy, had it gone, would be counted now.
        try await Task.sleep(for: hold + .milliseconds(500))
        // Idle links exchange no prunes or grafts (one answered by the other would echo).
        func steering() throws -> Int {
            try links.reduce(0) { total, link in
                try total + (link.2.leftChannel.sentMessages() + link.2.rightChannel.sentMessages()).count {
                    if case .pushNote(let note) = $0 { !note.lazy.isEmpty || !note.eager.isEmpty } else { false }
                }
            }
        }
        let settled = try steering()
        try await Task.sleep(for: .seconds(1))
        #expect(try steering() == settled, "push notes went on while nothing was written")
        for (peer, earlier) in zip(peers, before) {
            let now = peer.engine.deliveries
            #expect(now.duplicates == earlier.duplicates, "\(peer.engine.options.name): \(earlier) then \(now)")
            // Each of the 8 writes made elsewhere, merged once.
            #expect(now.documents - earlier.documents == 8, "\(peer.engine.options.name): \(earlier) then \(now)")
        }
        for peer in peers { peer.engine.stop() }
    }

    @Test("when both neighbours of a peer prune their links to it at once, its own writes still leave it at once, on one eager link")
    func simultaneousPrunesKeepAnEagerPathOut() async throws {
        // A hold far longer than the test waits: a write that went out only after a hold fails.
        let hold: Duration = .seconds(60)
        let peers = try (0..<3).map { try Peer("p\($0)", lazyPushHold: hold) }
        let subscriptions = try peers.map { try $0.subscribe("SELECT * FROM orders") }
        let p01 = connect(peers[0], peers[1]), p12 = connect(peers[1], peers[2]), p02 = connect(peers[0], peers[2])
        for link in [p01, p12, p02] { #expect(await link.caughtUp()) }
        // (No write yet: one would already prune links, in whatever order its copies arrive.)
        // p1 found p0's pushes duplicated and p2 found p1's, at the same moment (under load
        // the direct hop can be the slower one): each asks its server to push lazily.
        let duplicate = DeltaBatch(documents: [DocumentDelta(key: DocumentKey("orders", "o0000"), state: DocumentState())])
        async let first: Void = p01.right.pushAfterMerging(duplicate, changed: 0, subscription: subscriptions[1].id)
        async let second: Void = p12.right.pushAfterMerging(duplicate, changed: 0, subscription: subscriptions[2].id)
        _ = await (first, second)
        #expect(p01.right.lazyAsked.withLock { !$0.isEmpty } && p12.right.lazyAsked.withLock { !$0.isEmpty })
        // The notes (and the answers they draw, both ways) cross.
        try await Task.sleep(for: .milliseconds(500))
        try peers[1].store.insertOrders(0..<1)
        #expect(try await eventually { try peers.allSatisfy { try ids($0.store, "orders").count == 1 } },
                "p1's write was held on both its links")
        for peer in peers { peer.engine.stop() }
    }

    @Test("a peer whose eager neighbour stops sending still gets every change, through the lazy one, after its hold")
    func lazyLinkDeliversWhenEagerPathStalls() async throws {
        let (peers, links) = try Self.triangle()
        for (_, _, link) in links { #expect(await link.caughtUp()) }
        // Write until some peer has asked a neighbour to push lazily.
        var lazy: (peer: Int, lazyNeighbour: Int)?
        for n in 0..<30 where lazy == nil {
            #expect(try await Self.write(n, at: peers[n % 3], reaching: peers))
            try await Task.sleep(for: .milliseconds(50))
            for (a, b, link) in links {
                if !link.left.lazyAsked.withLock({ $0.isEmpty }) { lazy = (a, b) }
                if !link.right.lazyAsked.withLock({ $0.isEmpty }) { lazy = (b, a) }
            }
        }
        guard let lazy else {
            Issue.record("no peer asked for lazy push")
            return
        }
        let eager = 3 - lazy.peer - lazy.lazyNeighbour
        // The eager neighbour's sends to the peer stall (its link takes nothing more).
        guard let (a, _, link) = links.first(where: { Set([$0.0, $0.1]) == Set([lazy.peer, eager]) }) else { return }
        let stalled = a == eager ? link.leftChannel : link.rightChannel
        stalled.hold()
        // Two writes at the lazy neighbour, the second while the first is held: the hold that
        // sends the first must not vouch for the second, which waits for the next hold.
        try peers[lazy.lazyNeighbour].store.insertOrders(200..<201)
        try await Task.sleep(for: .milliseconds(100))
        try peers[lazy.lazyNeighbour].store.insertOrders(201..<202)
        #expect(try await eventually { try Set(ids(peers[lazy.peer].store, "orders")).isSuperset(of: ["o0200", "o0201"]) },
                "p\(lazy.peer) got both of p\(lazy.lazyNeighbour)'s writes from it while p\(eager) sent nothing")
        try peers[eager].store.insertOrders(100..<101)
        #expect(try await eventually { try ids(peers[lazy.peer].store, "orders").contains("o0100") },
                "p\(lazy.peer) got p\(eager)'s write through p\(lazy.lazyNeighbour), which pushed lazily")
        stalled.releaseAll()
        #expect(try await eventually {
            let reference = try contents(peers[0].store, "orders")
            return try peers.allSatisfy { try contents($0.store, "orders") == reference }
        })
        for peer in peers { peer.engine.stop() }
    }

    @Test("random writes, spread out, on a mesh of cycles converge while links go lazy and eager",
          arguments: SeededRandom.seeds(count: 3, test: "lazy-push-convergence"))
    func randomWritesConverge(seed: UInt64) async throws {
        print("lazy-push-convergence seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let count = 5
        let peers = try (0..<count).map { try Peer("p\($0)", batchSize: Int.random(in: 2...20, using: &rng), lazyPushHold: SyncEngine.Options.lazyPushDefaultHold) }
        for peer in peers { _ = try peer.subscribe("SELECT * FROM items") }
        // A ring and two chords: every peer on a cycle, most on two.
        var edges = (0..<count).map { ($0, ($0 + 1) % count) }
        edges += [(0, 2), (1, 3)]
        let links = edges.map { connect(peers[$0.0], peers[$0.1]) }
        for link in links { #expect(await link.caughtUp()) }
        let keys = (0..<12).map { DocumentKey("items", "item\($0)") }
        var wentLazy = false
        for _ in 0..<120 {
            let peer = peers.randomElement(using: &rng)!
            let key = keys.randomElement(using: &rng)!
            try peer.store.write { tx in
                try tx.apply(key) { state, stamp in RandomMutations.mutate(&state, at: stamp, &rng) }
            }
            // Writes land before, during and after other writes' holds.
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...60, using: &rng)))
            wentLazy = wentLazy || links.contains { !$0.left.lazyAsked.withLock { $0.isEmpty } || !$0.right.lazyAsked.withLock { $0.isEmpty } }
        }
        #expect(wentLazy, "seed \(seed): no link went lazy")
        let converged = try await eventually {
            let reference = try contents(peers[0].store, "items")
            return try peers.dropFirst().allSatisfy { try contents($0.store, "items") == reference }
        }
        #expect(converged, "seed \(seed)")
        for peer in peers { peer.engine.stop() }
    }

    @Test("two peers never go lazy: no push note crosses their session")
    func twoPeersStayEager() async throws {
        let a = try Peer("a", lazyPushHold: SyncEngine.Options.lazyPushDefaultHold), b = try Peer("b", lazyPushHold: SyncEngine.Options.lazyPushDefaultHold)
        for peer in [a, b] { _ = try peer.subscribe("SELECT * FROM orders") }
        let link = connect(a, b)
        #expect(await link.caughtUp())
        for n in 0..<10 {
            try (n % 2 == 0 ? a : b).store.insertOrders(n..<n + 1)
            #expect(try await eventually { try ids(a.store, "orders").count == n + 1 && ids(b.store, "orders").count == n + 1 })
        }
        let notes = try (link.leftChannel.sentMessages() + link.rightChannel.sentMessages()).filter {
            if case .pushNote = $0 { true } else { false }
        }
        #expect(notes.isEmpty, "\(notes)")
        for peer in [a, b] { peer.engine.stop() }
    }
}
