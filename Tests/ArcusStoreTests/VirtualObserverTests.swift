import ArcusCRDT
import Foundation
import Synchronization
import Testing
@testable import ArcusStore

/// Observers of `system:` collections: their rows are made when read, so an observer reads its
/// SELECT again after commits, when the registering program says the rows changed, and once a
/// second; it fires only when the result differs from the last one it delivered.
@Suite("Observers of system collections")
struct VirtualObserverTests {
    @Test("an observer of system:collections gets the counts at once, then again after a commit changes them")
    func storeCollections() throws {
        let t = try TemporaryStore()
        try t.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'a'})")
        let log = EventLog()
        let observer = try t.store.registerObserver("SELECT _id, documents FROM system:collections WHERE _id = 'cars'") { log.append($0) }
        defer { observer.cancel() }
        #expect(log.wait(for: 1).first?.items == [["_id": "cars", "documents": 1]])

        try t.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'b'}), ({'_id': 'c'})")
        let events = log.wait(for: 2)
        try #require(events.count == 2)
        #expect(events[1].items == [["_id": "cars", "documents": 3]])
        #expect(events[1].diff.updates == [0])
        // A commit elsewhere leaves the observed rows as they were: no event, now or at the next poll.
        try t.store.execute("INSERT INTO boats DOCUMENTS ({'_id': 'x'})")
        Thread.sleep(forTimeInterval: 1.3)
        #expect(log.wait(for: 3).count == 2, "the rows did not change, so no event")
    }

    @Test("an observer of a registered collection fires when its program says the rows changed, with a diff by _id; grouped rows diff by position")
    func registered() throws {
        let t = try TemporaryStore()
        let peers = Mutex<[Value]>([["_id": "p1", "state": "connected"]])
        t.store.registerVirtualCollection("system:peers") { _ in peers.withLock { $0 } }
        let rows = EventLog(), counts = EventLog()
        let observer = try t.store.registerObserver("SELECT * FROM system:peers ORDER BY _id") { rows.append($0) }
        let counter = try t.store.registerObserver("SELECT state, COUNT(*) AS n FROM system:peers GROUP BY state ORDER BY state") { counts.append($0) }
        defer { observer.cancel(); counter.cancel() }
        #expect(rows.wait(for: 1).first?.items == [["_id": "p1", "state": "connected"]])
        #expect(counts.wait(for: 1).first?.items == [["state": "connected", "n": 1]])

        peers.withLock { $0 = [["_id": "p0", "state": "connected"], ["_id": "p1", "state": "not_connected"]] }
        t.store.virtualCollectionsChanged()
        let events = rows.wait(for: 2)
        try #require(events.count == 2)
        #expect(events[1].items == [["_id": "p0", "state": "connected"], ["_id": "p1", "state": "not_connected"]])
        #expect(events[1].diff.insertions == [0])
        #expect(events[1].diff.updates == [1])
        let grouped = counts.wait(for: 2)
        try #require(grouped.count == 2)
        #expect(grouped[1].items == [["state": "connected", "n": 1], ["state": "not_connected", "n": 1]])
        #expect(grouped[1].diff.insertions == [1])

        // Rows that change without a word from their program still reach the observer: the poll.
        peers.withLock { $0 = [] }
        #expect(rows.wait(for: 3).last?.items == [])
        #expect(rows.wait(for: 3).last?.diff.deletions == [0, 1])
    }

    @Test("a cancelled observer of a system collection gets nothing more; a bad one is refused at once")
    func cancelled() throws {
        let t = try TemporaryStore()
        let log = EventLog()
        let observer = try t.store.registerObserver("SELECT documents FROM system:collections") { log.append($0) }
        #expect(log.wait(for: 1).count == 1)
        observer.cancel()
        #expect(observer.isCancelled)
        try t.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'a'})")
        t.store.virtualCollectionsChanged()
        Thread.sleep(forTimeInterval: 1.3)
        #expect(log.wait(for: 2).count == 1, "nothing after cancel")
        #expect(throws: (any Error).self) { try t.store.registerObserver("SELECT nope( FROM system:collections") { _ in } }
    }
}
