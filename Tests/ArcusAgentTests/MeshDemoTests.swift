import ArcusCRDT
import ArcusMesh
import ArcusTestSupport
import Foundation
import Testing
@testable import ArcusAgent
@testable import ArcusDemo

/// The loopback mesh as `arcus demo` runs it: every peer writes while the mesh syncs, then the
/// demo checks that every peer holds the same data and that nothing written was lost,
/// resurrected or duplicated (`DemoVerification`).
@Suite("Loopback mesh", .serialized)
struct MeshDemoTests {
    static func options(_ shape: Topology.Shape, peers: Int, seconds: Double, seed: UInt64) -> MeshDemo.Options {
        var options = MeshDemo.Options()
        options.shape = shape
        options.peers = peers
        options.seconds = seconds
        options.seed = seed
        // Convergence is asserted, not its speed: a busy CI machine gets five minutes.
        options.settleLimit = 300
        return options
    }

    static func expectClean(_ figures: MeshDemo.Figures, _ context: String) {
        #expect(figures.converged, "\(context): \(figures.jsonLine)")
        #expect(figures.verification.lost == 0, "\(context): lost updates")
        #expect(figures.verification.resurrected == 0, "\(context): resurrected removals")
        #expect(figures.verification.unexpected == 0, "\(context): duplicated or unknown data")
        #expect(figures.writes > 0)
    }

    @Test("16 peers, random topology, links dropping and coming back for 60 s while every peer writes: all converge, nothing lost, resurrected or duplicated",
          arguments: SeededRandom.seeds(count: 1, test: "mesh-drops"))
    func dropsForAMinute(seed: UInt64) async throws {
        print("mesh-drops seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var options = Self.options(.random, peers: 16, seconds: 60, seed: seed)
        options.drops = true
        options.meanTimeBetweenDrops = 0.5
        let figures = try await MeshDemo(options: options).run()
        print(figures.jsonLine)
        Self.expectClean(figures, "seed \(seed)")
        #expect(figures.drops >= 30, "about 120 drops are expected in 60 s")
        #expect(figures.linksMade >= figures.sessionLinks + figures.drops)
    }

    @Test("a chain of 10 converges: writes cross up to nine hops", arguments: SeededRandom.seeds(count: 1, test: "mesh-chain"))
    func chain(seed: UInt64) async throws {
        print("mesh-chain seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        let figures = try await MeshDemo(options: Self.options(.chain, peers: 10, seconds: 5, seed: seed)).run()
        print(figures.jsonLine)
        #expect(figures.diameter == 9)
        Self.expectClean(figures, "seed \(seed)")
    }

    @Test("8 peers on the emulated Bluetooth radio, links dropping, secured: all converge, nothing lost, resurrected or duplicated",
          arguments: SeededRandom.seeds(count: 1, test: "mesh-ble-emulated"))
    func overTheEmulatedRadio(seed: UInt64) async throws {
        print("mesh-ble-emulated seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var options = Self.options(.random, peers: 8, seconds: 5, seed: seed)
        options.transport = .bleEmulated
        options.drops = true
        options.meanTimeBetweenDrops = 0.5
        options.secure = true
        let figures = try await MeshDemo(options: options).run()
        print(figures.jsonLine)
        Self.expectClean(figures, "seed \(seed)")
        #expect(figures.jsonLine.contains(#""transport": "ble-emulated""#))
        #expect(figures.drops > 0 && figures.linksMade > figures.sessionLinks, "\(figures.jsonLine)")
    }

    @Test("a star of 12 converges through its hub", arguments: SeededRandom.seeds(count: 1, test: "mesh-star"))
    func star(seed: UInt64) async throws {
        print("mesh-star seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        let figures = try await MeshDemo(options: Self.options(.star, peers: 12, seconds: 3, seed: seed)).run()
        #expect(figures.degreeMax == 11)
        Self.expectClean(figures, "seed \(seed)")
    }

    @Test("grid meshes of 16, 32 and 64 peers converge, and what a peer sends follows its degree, not N",
          arguments: SeededRandom.seeds(count: 1, test: "mesh-scale"))
    func scale(seed: UInt64) async throws {
        print("mesh-scale seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var perPeerPerLinkPerWrite: [Double] = []
        for peers in [16, 32, 64] {
            let figures = try await MeshDemo(options: Self.options(.mesh, peers: peers, seconds: 5, seed: seed)).run()
            print(figures.jsonLine)
            Self.expectClean(figures, "\(peers) peers, seed \(seed)")
            #expect(figures.degreeMax <= 4)
            perPeerPerLinkPerWrite.append(Double(figures.bytesPerPeer) / figures.degreeMean / Double(figures.writes))
        }
        // N grows fourfold; bytes a peer sends per link and per write stay within a factor of two.
        let low = perPeerPerLinkPerWrite.min()!, high = perPeerPerLinkPerWrite.max()!
        #expect(high < 2 * low, "bytes per peer, per link, per write: \(perPeerPerLinkPerWrite)")
    }

    @Test("over BLE-like links (244-byte MTU, 20 KB/s) frames are cut to the MTU and a small mesh converges")
    func bluetoothLinks() async throws {
        var options = Self.options(.chain, peers: 4, seconds: 3, seed: 42)
        options.link = .ble
        options.rate = 10
        let figures = try await MeshDemo(options: options).run()
        Self.expectClean(figures, "ble chain")
    }

    @Test("arcus demo --scenario attachment: a blob fetched across two hops, cut half-way, resumes and verifies",
          arguments: [EmulatedLink.lan, .ble])
    func attachmentAcrossHops(link: EmulatedLink) async throws {
        var options = AttachmentDemo.Options()
        options.hops = 2
        options.link = link
        options.bytes = link == .ble ? 30_000 : 300_000
        options.downtime = 0.3
        let figures = try await AttachmentDemo(options: options).run()
        print(figures.jsonLine)
        #expect(figures.verified)
        #expect(figures.cutAtBytes >= Int64(options.bytes / 2) && figures.cutAtBytes < Int64(options.bytes))
        #expect(figures.resumedFromBytes >= figures.cutAtBytes)
        // Starting over would carry the half that had arrived again: at least 1.5 × the blob, plus
        // framing (about a quarter more on BLE's small frames). Resuming carries the rest once.
        #expect(figures.lastLinkBytes < options.bytes * 3 / 2, "\(figures.lastLinkBytes) bytes crossed the last link")
    }

    @Test("a crowd (32 peers, each hearing about 12): sessions on at most 4 links a peer, a connected mesh, clean convergence, and far fewer duplicate deliveries and bytes than a session with every peer heard",
          arguments: SeededRandom.seeds(count: 1, test: "mesh-crowd"))
    func crowdKeepsFewSessions(seed: UInt64) async throws {
        print("mesh-crowd seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var options = Self.options(.random, peers: 32, seconds: 2, seed: seed)
        options.degree = 12
        options.sessionLimit = nil
        let everyone = try await MeshDemo(options: options).run()
        print(everyone.jsonLine)
        Self.expectClean(everyone, "no limit, seed \(seed)")
        options.sessionLimit = 4
        let pruned = try await MeshDemo(options: options).run()
        print(pruned.jsonLine)
        Self.expectClean(pruned, "limit 4, seed \(seed)")
        #expect(pruned.degreeMean == everyone.degreeMean, "the same peers hear each other")
        #expect(pruned.sessionDegreeMax <= 4 && pruned.sessionLinks < everyone.sessionLinks / 2)
        #expect(pruned.deliveries > 0 && everyone.deliveries > 0)
        #expect(pruned.duplicateDeliveries * 2 < everyone.duplicateDeliveries, "duplicates: \(pruned.duplicateDeliveries) pruned, \(everyone.duplicateDeliveries) not")
        #expect(pruned.bytesPerPeer * 2 < everyone.bytesPerPeer, "bytes per peer: \(pruned.bytesPerPeer) pruned, \(everyone.bytesPerPeer) not")
    }

    @Test("topologies have the shape their names promise")
    func topologies() {
        #expect(Topology(.chain, peers: 10).links.count == 9)
        #expect(Topology(.chain, peers: 10).diameter == 9)
        #expect(Topology(.star, peers: 10).maxDegree == 9)
        #expect(!Topology(.chain, peers: 3).links.isEmpty && Topology(.chain, peers: 3).isConnected)
        for peers in [1, 2, 5, 16, 30, 64] {
            let grid = Topology(.mesh, peers: peers)
            #expect(grid.maxDegree <= 4)
            #expect(grid.isConnected, "a grid of \(peers)")
        }
        for seed in UInt64(1)...20 {
            let random = Topology(.random, peers: 16, seed: seed)
            #expect(random.links.count == 24)
            #expect(Set(random.links).count == random.links.count && random.links.allSatisfy { $0.a != $0.b })
            #expect(random.isConnected, "seed \(seed)")
            let crowd = Topology(.random, peers: 64, seed: seed, degree: 20)
            #expect(crowd.links.count == 640 && crowd.isConnected, "seed \(seed)")
            let kept = crowd.pruned(LinkPruning(limit: 4), seed: seed)
            #expect(kept.maxDegree <= 4 && kept.isConnected && Set(kept.links).isSubset(of: Set(crowd.links)), "seed \(seed)")
        }
    }
}
