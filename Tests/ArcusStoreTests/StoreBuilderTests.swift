import ArcusCRDT
import Foundation
import Testing
import Synchronization
@testable import ArcusStore

@Suite("Builder API, transactions and write strategies")
struct StoreBuilderTests {
    @Test("the shapes of the seeds: upsert, find with $args, findByID, update with a counter, remove, evict")
    func seedShapes() throws {
        let t = try TemporaryStore()
        let cars = t.store.collection("cars")
        let id = try cars.upsert(["make": "toyota", "color": "blue", "ownedCars": 0])
        try cars.upsert(["_id": "b", "make": "honda", "color": "red"])
        #expect(try cars.find("color == $args.color", args: ["color": "blue"]).exec().count == 1)
        try cars.findByID(id).update { doc in
            doc["age"].set(32)
            doc["ownedCars"].replaceWithCounter().increment(by: 2)
            doc["ownedCars"].counter?.increment(by: 1)
            doc["owner"]["name"].set("susan")
        }
        let car = try #require(try cars.findByID(id).exec())
        #expect(car[path: ["age"]] == 32)
        #expect(car[path: ["ownedCars"]] == 3)
        #expect(car[path: ["owner", "name"]] == "susan")
        #expect(try cars.find("make = 'honda'").remove() == ["b"])
        #expect(try cars.findByID("b").exec() == nil)
        #expect(try cars.findAll().evict() == [id])
        #expect(try cars.findAll().exec().isEmpty)
    }

    @Test("sort and limit in the builder")
    func sortAndLimit() throws {
        let t = try TemporaryStore()
        for i in 0..<10 { try t.store.collection("n").upsert(["_id": .string("\(i)"), "v": .int(Int64(9 - i))]) }
        let top = try t.store.collection("n").findAll().sort(["v"]).limit(3).exec()
        #expect(top.compactMap { $0[path: ["v"]] } == [0, 1, 2])
    }

    @Test("a transaction batches writes over several collections and reports what each did")
    func transactionResults() throws {
        let t = try TemporaryStore()
        try t.store.collection("a").upsert(["_id": "1", "x": 1])
        let results = try t.store.write { tx in
            try tx.upsert(["_id": "1", "x": 2], into: "a")
            try tx.upsert(["_id": "2", "x": 3], into: "b")
            try tx.remove(DocumentKey("a", "1"))
            try tx.evict(DocumentKey("b", "2"))
        }
        #expect(results.map(\.kind) == [.updated, .inserted, .removed, .evicted])
        #expect(results.map(\.collection) == ["a", "b", "a", "b"])
    }

    @Test("an error thrown inside a transaction rolls everything back")
    func rollback() throws {
        let t = try TemporaryStore()
        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try t.store.write { tx in
                try tx.upsert(["_id": "1", "x": 1], into: "a")
                _ = try tx.execute("INSERT INTO b DOCUMENTS ({'_id': '2'})")
                throw Abort()
            }
        }
        #expect(try t.store.execute("SELECT * FROM a").items.isEmpty)
        #expect(try t.store.execute("SELECT * FROM b").items.isEmpty)
        #expect(t.store.changeSequence >= 0)
    }

    @Test("a write transaction started inside another throws instead of deadlocking")
    func nestedWrite() throws {
        let t = try TemporaryStore()
        #expect(throws: StoreError.self) {
            try t.store.collection("people").findByID("x").update { _ in
                try t.store.collection("settings").upsert(["_id": "abc123", "preference": 31])
            }
        }
        #expect(throws: StoreError.self) {
            try t.store.write { _ in try t.store.execute("INSERT INTO a DOCUMENTS ({'_id': 'y'})") }
        }
        // The store is still usable afterwards.
        try t.store.collection("settings").upsert(["_id": "abc123", "preference": 31])
        #expect(try t.store.collection("settings").findByID("abc123").exec() != nil)
    }

    @Test("write strategies: insertIfAbsent, insertDefaultIfAbsent, updateDifferentOnly")
    func strategies() throws {
        let t = try TemporaryStore()
        let people = t.store.collection("people")
        try people.upsert(["_id": "p", "name": "Adam"], writeStrategy: .insertDefaultIfAbsent)
        try people.upsert(["_id": "p", "name": "Max"])
        try people.upsert(["_id": "p", "name": "Adam"], writeStrategy: .insertDefaultIfAbsent)
        #expect(try people.findByID("p").exec()?[path: ["name"]] == "Max")
        try people.upsert(["_id": "p", "name": "Zed"], writeStrategy: .insertIfAbsent)
        #expect(try people.findByID("p").exec()?[path: ["name"]] == "Max")
        let before = t.store.changeSequence
        try people.upsert(["_id": "p", "name": "Max"], writeStrategy: .updateDifferentOnly)
        #expect(t.store.changeSequence == before, "an unchanged value writes nothing")
        try people.upsert(["_id": "p", "name": "Max", "age": 40], writeStrategy: .updateDifferentOnly)
        #expect(t.store.changeSequence == before + 1)
    }

    @Test("a second process (or store) opening the same data directory gets a clear error")
    func exclusiveDirectory() throws {
        let t = try TemporaryStore()
        #expect {
            _ = try Store(directory: t.directory)
        } throws: { error in
            "\(error)".contains("in use by process")
        }
    }

    @Test("a closed store lets go of its directory, marked left cleanly, and refuses every later call with a clear error")
    func closeReleasesDirectory() throws {
        let t = try TemporaryStore()
        try t.store.collection("a").upsert(["_id": "1", "v": 1])
        try t.store.close()
        try t.store.close()
        #expect { try t.store.execute("SELECT * FROM a") } throws: { Self.isClosed($0) }
        #expect { try t.store.collection("a").upsert(["_id": "2", "v": 2]) } throws: { Self.isClosed($0) }
        let reopened = try Store(directory: t.directory)
        #expect(!reopened.mayHaveLostCommits, "closed cleanly")
        #expect(try reopened.collection("a").findByID("1").exec()?[path: ["v"]] == 1)
        let memory = try Store(inMemory: Store.Options())
        try memory.close()
        #expect { try memory.execute("SELECT * FROM a") } throws: { Self.isClosed($0) }
    }

    @Test("after a close, attachments, statistics, settings and the integrity check say the store is closed, as queries do")
    func everyPathSaysClosed() throws {
        let t = try TemporaryStore()
        let token = try t.store.newAttachment(Data("kept".utf8))
        try t.store.close()
        let calls: [(String, () throws -> Void)] = [
            ("newAttachment", { _ = try t.store.newAttachment(Data("more".utf8)) }),
            ("fetchAttachment", { _ = try t.store.fetchAttachment(token) }),
            ("collectAttachmentGarbage", { _ = try t.store.collectAttachmentGarbage(grace: 0) }),
            ("reclaimableAttachments", { _ = try t.store.reclaimableAttachments() }),
            ("completeAttachment", { try t.store.completeAttachment(token) }),
            ("referencedAttachment", { _ = try t.store.referencedAttachment(hash: token.hash) }),
            ("documentCounts", { _ = try t.store.documentCounts() }),
            ("setSynchronous", { try t.store.setSynchronous(.full) }),
            ("checkIntegrity", { _ = try t.store.checkIntegrity() }),
        ]
        for (name, call) in calls {
            #expect("\(name)") { try call() } throws: { Self.isClosed($0) }
        }
    }

    @Test("writes racing a close either commit, and are there when the directory opens again, or are refused as closed")
    func closeDuringWrites() throws {
        let t = try TemporaryStore()
        let store = t.store
        let acknowledged = Mutex<Set<String>>([]), refusals = Mutex<[String]>([])
        let group = DispatchGroup()
        for worker in 0..<4 {
            DispatchQueue.global().async(group: group) {
                for n in 0..<2_000 {
                    let id = "w\(worker)-\(n)"
                    do {
                        try store.collection("a").upsert(["_id": .string(id), "n": .int(Int64(n))])
                        acknowledged.withLock { _ = $0.insert(id) }
                    } catch {
                        if !Self.isClosed(error) { refusals.withLock { $0.append("\(error)") } }
                        return
                    }
                }
            }
        }
        // Closed once the writers are under way.
        while acknowledged.withLock({ $0.count }) < 200 { Thread.sleep(forTimeInterval: 0.001) }
        do { try store.close() } catch { refusals.withLock { $0.append("close: \(error)") } }
        group.wait()
        #expect(refusals.withLock { $0 }.isEmpty, "refused otherwise than as closed: \(refusals.withLock { $0 }.prefix(3))")
        let reopened = try Store(directory: t.directory)
        let stored = Set(try reopened.execute("SELECT _id FROM a").items.compactMap { $0[path: ["_id"]]?.stringValue })
        let written = acknowledged.withLock { $0 }
        #expect(written.isSubset(of: stored), "\(written.subtracting(stored).count) acknowledged writes missing")
        #expect(written.count < 6_000, "the close came after every write: the race was not run")
    }

    static func isClosed(_ error: any Error) -> Bool {
        guard case .closed? = error as? StoreError else { return false }
        return "\(error)".contains("open it again")
    }

    @Test("the site id and the clock survive reopening")
    func reopen() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var site: SiteID
        do {
            let store = try Store(directory: directory)
            site = store.site
            try store.collection("a").upsert(["_id": "1", "v": 1])
        }
        // A wall clock that went backwards (a Pi without a real-time clock) must not reuse stamps.
        var options = Store.Options()
        options.physicalClock = { 1000 }
        let reopened = try Store(directory: directory, options: options)
        #expect(reopened.site == site)
        try reopened.collection("a").upsert(["_id": "1", "v": 2])
        #expect(try reopened.collection("a").findByID("1").exec()?[path: ["v"]] == 2)
    }
}
