import ArcusCRDT
import Foundation
import Synchronization
import Testing
@testable import ArcusStore

/// Change listeners (what sync and the agent's observers build on) hear of a commit once, after
/// it, and never of a transaction that rolled back.
@Suite("Change listeners")
struct ChangeListenerTests {
    /// What one listener heard: each commit's document IDs, and the store's version vector as
    /// the listener found it then.
    final class Heard: Sendable {
        let commits = Mutex<[(ids: [Value], version: VersionVector)]>([])
    }

    static func listen(to store: Store) -> (Heard, ChangeListener) {
        let heard = Heard()
        let listener = store.addChangeListener { [weak store] changes in
            let version = store?.version ?? .empty
            heard.commits.withLock { $0.append((changes.map(\.key.id), version)) }
        }
        return (heard, listener)
    }

    @Test("a listener hears each commit once, with the store's version already holding its events",
          arguments: [false, true])
    func hearsCommits(onDisk: Bool) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-listener-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = onDisk ? try Store(directory: directory) : try Store(inMemory: Store.Options())
        let (heard, listener) = Self.listen(to: store)
        defer { listener.cancel() }
        try store.collection("c").upsert(["_id": "a", "n": 1])
        try store.write { tx in
            try tx.upsert(["_id": "b", "n": 2], into: "c")
            try tx.upsert(["_id": "c", "n": 3], into: "c")
        }
        let commits = heard.commits.withLock { $0 }
        #expect(commits.map(\.ids) == [["a"], ["b", "c"]])
        // The events each commit wrote are in the version the listener read, so what it does
        // next (say, announce the store's version to peers) covers them.
        let site = store.site
        #expect(commits.map { $0.version[site] != nil } == [true, true])
        if commits.count == 2, let first = commits[0].version[site], let second = commits[1].version[site] {
            #expect(first < second)
            #expect(second == store.version[site])
        }
    }

    @Test("a transaction that throws is not heard of", arguments: [false, true])
    func rollbackIsSilent(onDisk: Bool) throws {
        struct Refused: Error {}
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-listener-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = onDisk ? try Store(directory: directory) : try Store(inMemory: Store.Options())
        let (heard, listener) = Self.listen(to: store)
        defer { listener.cancel() }
        #expect(throws: Refused.self) {
            try store.write { tx in
                try tx.upsert(["_id": "a", "n": 1], into: "c")
                throw Refused()
            }
        }
        try store.collection("c").upsert(["_id": "b", "n": 2])
        #expect(heard.commits.withLock { $0.map(\.ids) } == [["b"]])
    }
}
