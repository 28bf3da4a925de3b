import ArcusCRDT
import Foundation
import Synchronization
import Testing
@testable import ArcusStore

/// Collects observer events for a test to wait on.
final class EventLog: Sendable {
    private let events = Mutex<[ObserverEvent]>([])

    func append(_ event: ObserverEvent) { events.withLock { $0.append(event) } }

    /// Waits (up to a few seconds) until `count` events arrived; returns them.
    func wait(for count: Int) -> [ObserverEvent] {
        for _ in 0..<500 {
            let current = events.withLock { $0 }
            if current.count >= count { return current }
            usleep(10_000)
        }
        return events.withLock { $0 }
    }
}

@Suite("Observers")
struct StoreObserverTests {
    @Test("an observer gets the result at once, then result and diff after each commit that changes it")
    func diffs() throws {
        let t = try TemporaryStore()
        try t.store.execute("INSERT INTO o DOCUMENTS ({'_id': 'a', 'status': 'open', 'n': 1}), ({'_id': 'b', 'status': 'done', 'n': 2})")
        let log = EventLog()
        let observer = try t.store.registerObserver("SELECT * FROM o WHERE status = 'open' ORDER BY n") { log.append($0) }
        defer { observer.cancel() }
        #expect(log.wait(for: 1).first?.items.count == 1)

        try t.store.execute("UPDATE o SET status = 'open' WHERE _id = 'b'")       // insertion at 1
        try t.store.execute("UPDATE o SET n = 0 WHERE _id = 'b'")                  // move 1 → 0, update
        try t.store.execute("INSERT INTO o DOCUMENTS ({'_id': 'c', 'status': 'done', 'n': 9})")  // no change: no event
        try t.store.execute("DELETE FROM o WHERE _id = 'a'")                       // deletion at 1
        let events = log.wait(for: 4)
        #expect(events.count == 4)
        guard events.count == 4 else { return }
        #expect(events[1].diff.insertions == [1])
        #expect(events[1].items.compactMap { $0[path: ["_id"]]?.stringValue } == ["a", "b"])
        #expect(events[2].diff.moves == [ResultDiff.Move(from: 1, to: 0)])
        #expect(events[2].diff.updates == [0])
        #expect(events[3].diff.deletions == [1])
        #expect(events[3].items.compactMap { $0[path: ["_id"]]?.stringValue } == ["b"])
    }

    @Test("commits that do not touch the result send nothing; a cancelled observer hears nothing more")
    func quiet() throws {
        let t = try TemporaryStore()
        let log = EventLog()
        let observer = try t.store.collection("x").find("v > 10").observeLocal { log.append($0) }
        _ = log.wait(for: 1)
        try t.store.collection("x").upsert(["_id": "1", "v": 1])
        try t.store.collection("other").upsert(["_id": "1", "v": 100])
        try t.store.collection("x").upsert(["_id": "2", "v": 11])
        #expect(log.wait(for: 2).count == 2)
        observer.cancel()
        try t.store.collection("x").upsert(["_id": "3", "v": 12])
        usleep(100_000)
        #expect(log.wait(for: 2).count == 2)
    }

    @Test("LIMIT windows shift as documents enter and leave")
    func window() throws {
        let t = try TemporaryStore()
        for i in 1...5 { try t.store.collection("w").upsert(["_id": .string("\(i)"), "rank": .int(Int64(i))]) }
        let log = EventLog()
        let observer = try t.store.registerObserver("SELECT * FROM w ORDER BY rank LIMIT 2") { log.append($0) }
        defer { observer.cancel() }
        _ = log.wait(for: 1)
        try t.store.collection("w").upsert(["_id": "0", "rank": 0])
        let events = log.wait(for: 2)
        #expect(events.last?.items.compactMap { $0[path: ["_id"]]?.stringValue } == ["0", "1"])
        #expect(events.last?.diff.insertions == [0])
        #expect(events.last?.diff.deletions == [1])
    }
}
