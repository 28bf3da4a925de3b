import ArcusCRDT
import Foundation
import Testing
@testable import ArcusStore

/// Observers of aggregate queries: the store's observers follow every commit to the observed
/// collection, so an aggregate's rows are recomputed when a matching document changes and an
/// event goes out only when the rows differ.
@Suite("Observers of aggregate queries")
struct AggregateObserverTests {
    @Test("an observed COUNT(*) fires with the new count after an insert, not for another collection or a non-matching write")
    func count() throws {
        let t = try TemporaryStore()
        try t.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'a', 'make': 'ford'})")
        let log = EventLog()
        let observer = try t.store.registerObserver("SELECT COUNT(*) AS n FROM cars WHERE make = :m", arguments: ["m": "ford"]) { log.append($0) }
        defer { observer.cancel() }
        #expect(log.wait(for: 1).first?.items == [["n": 1]])

        try t.store.execute("INSERT INTO boats DOCUMENTS ({'_id': 'x', 'make': 'ford'})")   // another collection: no event
        try t.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'b', 'make': 'audi'})")    // does not match: no event
        try t.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'c', 'make': 'ford'})")    // count 2
        let events = log.wait(for: 2)
        usleep(100_000)
        #expect(log.wait(for: 3).count == 2, "only the matching insert changed the count")
        guard events.count >= 2 else { return }
        #expect(events[1].items == [["n": 2]])
        #expect(events[1].diff.updates == [0])

        try t.store.execute("DELETE FROM cars WHERE make = 'ford'")
        #expect(log.wait(for: 3).last?.items == [["n": 0]])
    }

    @Test("an observed GROUP BY gets rows as groups appear, change and disappear")
    func groups() throws {
        let t = try TemporaryStore()
        let log = EventLog()
        let observer = try t.store.registerObserver("SELECT make, COUNT(*) AS n FROM cars GROUP BY make ORDER BY make") { log.append($0) }
        defer { observer.cancel() }
        #expect(log.wait(for: 1).first?.items == [])
        try t.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'a', 'make': 'ford'}), ({'_id': 'b', 'make': 'kia'})")
        try t.store.execute("UPDATE cars SET make = 'ford' WHERE _id = 'b'")
        try t.store.execute("UPDATE cars SET year = 2020 WHERE _id = 'b'")   // rows unchanged: no event
        let events = log.wait(for: 3)
        usleep(100_000)
        #expect(log.wait(for: 4).count == 3)
        guard events.count == 3 else { return }
        #expect(events[1].items == [["make": "ford", "n": 1], ["make": "kia", "n": 1]])
        #expect(events[1].diff.insertions == [0, 1])
        #expect(events[2].items == [["make": "ford", "n": 2]])
        #expect(events[2].diff.updates == [0])
        #expect(events[2].diff.deletions == [1])
    }
}
