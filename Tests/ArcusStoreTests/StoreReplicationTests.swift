import ArcusCodec
import ArcusCRDT
import ArcusTestSupport
import Foundation
import GRDB
import Testing
@testable import ArcusStore

/// The store's side of sync: its version vector, the change log read from a position, and
/// merging a peer's batch.
@Suite("Change log and merging")
struct StoreReplicationTests {
    /// Sends what `sender` has after `position` to `receiver` through encoded frames, as a peer
    /// would; returns the sender's new position for this receiver.
    static func sync(_ sender: Store, to receiver: Store, after position: Int64, limit: Int = 1000) throws -> Int64 {
        var position = position
        var encoder = FrameEncoder(), decoder = FrameDecoder()
        while true {
            let set = try sender.changes(after: position, since: receiver.version, limit: limit)
            guard case .deltaBatch(let batch)? = try decoder.decode(encoder.encode(.deltaBatch(set.batch))) else {
                throw StoreError.invalidQuery("the batch did not decode")
            }
            try receiver.merge(batch)
            position = set.position
            if set.isComplete { return position }
        }
    }

    static func everything(_ store: Store) throws -> [Value] {
        try ["a", "b"].flatMap { try store.execute("SELECT * FROM \($0) ORDER BY _id").items }
    }

    @Test("random writes on three stores, synced through frames in random order, converge", arguments: SeededRandom.seeds(count: 3, test: "store-sync"))
    func convergence(seed: UInt64) throws {
        print("store-sync seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let stores = try (0..<3).map { _ in try TemporaryStore() }
        // positions[from][to]: where `from`'s log was last sent to `to`.
        var positions = Array(repeating: Array(repeating: Int64(0), count: 3), count: 3)
        for _ in 0..<300 {
            let r = Int.random(in: 0..<3, using: &rng)
            if Int.random(in: 0..<5, using: &rng) == 0 {
                let to = (r + Int.random(in: 1...2, using: &rng)) % 3
                positions[r][to] = try Self.sync(stores[r].store, to: stores[to].store, after: positions[r][to], limit: Int.random(in: 1...8, using: &rng))
                continue
            }
            let key = DocumentKey(collection: ["a", "b"].randomElement(using: &rng)!, id: .string("d\(Int.random(in: 0..<12, using: &rng))"))
            var local = rng
            try stores[r].store.write { tx in
                try tx.apply(key) { state, stamp in RandomMutations.mutate(&state, at: stamp, &local) }
            }
            rng = local
        }
        for _ in 0..<2 {
            for from in 0..<3 { for to in 0..<3 where from != to {
                positions[from][to] = try Self.sync(stores[from].store, to: stores[to].store, after: positions[from][to])
            } }
        }
        let reference = try Self.everything(stores[0].store)
        for t in stores.dropFirst() {
            #expect(try Self.everything(t.store) == reference, "seed \(seed)")
            #expect(t.store.version == stores[0].store.version)
        }
        // Up to date: the log has nothing more, and says so.
        let idle = try stores[0].store.changes(after: positions[0][1], since: stores[1].store.version)
        #expect(idle.batch.documents.isEmpty && idle.isComplete && idle.position == positions[0][1])
    }

    @Test("reading the change log is a range of the table (seq is its rowid), never a scan")
    func changeLogUsesIndex() throws {
        let t = try TemporaryStore()
        for n in 0..<50 { try t.store.collection("a").upsert(["_id": .string("d\(n)"), "n": .int(Int64(n))]) }
        let plan = try t.store.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT collection, id, state, seq FROM document WHERE seq > ? ORDER BY seq LIMIT ?", arguments: [40, 10])
                .map { $0["detail"] as String }.joined(separator: "; ")
        }
        #expect(plan.contains("USING INTEGER PRIMARY KEY"), "\(plan)")
        #expect(!plan.contains("SCAN document;") && !plan.contains("USE TEMP B-TREE"), "\(plan)")
        let tail = try t.store.changes(after: t.store.changeSequence - 3, since: .empty)
        #expect(tail.batch.documents.map(\.key.id) == ["d47", "d48", "d49"])
    }

    @Test("observers hear of merged changes as of local ones")
    func observersSeeMerges() throws {
        let a = try TemporaryStore(), b = try TemporaryStore()
        let log = EventLog()
        let observer = try b.store.registerObserver("SELECT * FROM a WHERE color = 'blue'") { log.append($0) }
        defer { observer.cancel() }
        try a.store.collection("a").upsert(["_id": "x", "color": "blue"])
        try a.store.collection("a").upsert(["_id": "y", "color": "red"])
        let position = try Self.sync(a.store, to: b.store, after: 0)
        try a.store.collection("a").findByID("x").update { $0["color"].set("green") }
        _ = try Self.sync(a.store, to: b.store, after: position)
        let seen = log.wait(for: 3)
        #expect(seen.map(\.items.count) == [0, 1, 0])
        #expect(seen[1].diff.insertions == [0] && seen[2].diff.deletions == [0])
    }

    @Test("the version vector and the clock survive a restart; stamps stay above every merged event")
    func versionSurvivesRestart() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        // A peer whose clock runs an hour ahead.
        var ahead = Store.Options()
        ahead.physicalClock = { UInt64(Date().timeIntervalSince1970 * 1000) + 3_600_000 }
        let fast = try Store(inMemory: ahead)
        try fast.collection("a").upsert(["_id": "x", "n": 1])
        let version = try { () throws -> VersionVector in
            let store = try Store(directory: directory)
            _ = try Self.sync(fast, to: store, after: 0)
            return store.version
        }()
        let fastTime = try #require(version[fast.site])
        let store = try Store(directory: directory)
        #expect(store.version == version)
        try store.collection("a").upsert(["_id": "x", "n": 2])
        #expect(try #require(store.version[store.site]) > fastTime, "a write after the restart must win over what it saw")
        #expect(try store.collection("a").findByID("x").exec() == ["_id": "x", "n": 2])
    }

    @Test("a hostile delta nesting too deep is refused and nothing is merged")
    func hostileDelta() throws {
        let t = try TemporaryStore()
        var deep: Value = 1
        for _ in 0..<64 { deep = ["n": deep] }
        var state = DocumentState()
        _ = state.set(["x"], to: deep, at: Stamp(time: Timestamp(milliseconds: 1, logical: 0), site: SiteID(7)), hints: TypeHints(objects: .register))
        let before = t.store.changeSequence
        #expect(throws: StoreError.self) {
            try t.store.merge(DeltaBatch(documents: [DocumentDelta(key: DocumentKey(collection: "a", id: "z"), state: state)]))
        }
        #expect(t.store.changeSequence == before)
        #expect(try t.store.collection("a").findByID("z").exec() == nil)
        #expect(t.store.version.isEmpty)
    }
}
