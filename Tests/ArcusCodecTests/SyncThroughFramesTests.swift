import ArcusCRDT
import ArcusTestSupport
import Testing
@testable import ArcusCodec

/// Replicas that sync only through frames — "to" sends a summary of what it has seen, "from"
/// answers with what it lacks, each sync a fresh session — converge to the same documents.
@Suite("Sync through frames")
struct SyncThroughFramesTests {
    final class Replica {
        let site: SiteID
        var clock: HybridLogicalClock
        var documents: [DocumentKey: DocumentState] = [:]
        var version = VersionVector()

        init(site: SiteID, clock: HybridLogicalClock) {
            self.site = site
            self.clock = clock
        }

        func write(_ key: DocumentKey, _ rng: inout SeededRandom) throws {
            let stamp = Stamp(time: try clock.tick(), site: site)
            if RandomMutations.mutate(&documents[key, default: DocumentState()], at: stamp, &rng) != nil {
                version.observe(stamp)
            }
        }

        func answer(_ summary: Summary) -> DeltaBatch {
            DeltaBatch(documents: documents.map { DocumentDelta(key: $0.key, state: $0.value) }, covers: version, since: summary.version)
        }

        func receive(_ batch: DeltaBatch) {
            for delta in batch.documents {
                documents[delta.key, default: DocumentState()].join(delta.state)
                delta.state.forEachEvent { version.observe($0) }
            }
            if let covers = batch.covers { version.formUnion(covers) }
            clock.observe(version.maxTime, through: .max)
        }
    }

    static func sync(_ from: Replica, _ to: Replica) throws -> Int {
        var toOut = FrameEncoder(), fromIn = FrameDecoder(), fromOut = FrameEncoder(), toIn = FrameDecoder()
        let request = toOut.encode(.summary(Summary(version: to.version)))
        guard case .summary(let summary)? = try fromIn.decode(request) else { throw CodecError.invalidValue("summary") }
        let response = fromOut.encode(.deltaBatch(from.answer(summary)))
        guard case .deltaBatch(let batch)? = try toIn.decode(response) else { throw CodecError.invalidValue("batch") }
        to.receive(batch)
        return request.count + response.count
    }

    @Test("replicas converge", arguments: SeededRandom.seeds(count: 12, test: "sync-through-frames"))
    func converge(seed: UInt64) throws {
        print("sync-through-frames seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let count = Int.random(in: 3...6, using: &rng)
        let replicas = (0..<count).map { i in
            let skew = UInt64.random(in: 0...40, using: &rng)
            let tick = TickCounter()
            return Replica(site: SiteID(UInt64(i + 1) << 33 | 7), clock: HybridLogicalClock(physical: { 1_800_000_000_000 + skew + tick.next() }))
        }
        let keys = (0..<6).map { DocumentKey(["orders", "sensors"][$0 % 2], "d\(String(format: "%05d", $0))") }
        for _ in 0..<400 {
            if Int.random(in: 0..<8, using: &rng) == 0 {
                let a = Int.random(in: 0..<count, using: &rng)
                var b = Int.random(in: 0..<count, using: &rng)
                if a == b { b = (b + 1) % count }
                _ = try Self.sync(replicas[a], replicas[b])
            } else {
                try replicas[Int.random(in: 0..<count, using: &rng)].write(keys.randomElement(using: &rng)!, &rng)
            }
        }
        for _ in 0..<2 {
            for a in 0..<count { for b in 0..<count where a != b { _ = try Self.sync(replicas[a], replicas[b]) } }
        }
        for key in keys {
            let reference = replicas[0].documents[key]
            for r in 1..<count {
                #expect(replicas[r].documents[key]?.root == reference?.root, "seed \(seed): replica \(r) differs on \(key)")
            }
        }
        // Already in sync: the answer to a summary carries no document.
        var out = FrameEncoder(), into = FrameDecoder()
        let answer = out.encode(.deltaBatch(replicas[0].answer(Summary(version: replicas[1].version))))
        guard case .deltaBatch(let batch)? = try into.decode(answer) else { throw CodecError.invalidValue("batch") }
        #expect(batch.documents.isEmpty)
    }
}

final class TickCounter: @unchecked Sendable {
    // Used by one test task at a time.
    private var value: UInt64 = 0
    func next() -> UInt64 {
        value += 1
        return value
    }
}
