import ArcusCodec
import ArcusCRDT
import Foundation
import GRDB
import Synchronization
import Testing
@testable import ArcusStore

/// Remote times are bounded (`Store.latestAdmissibleTime`): the store's own merge path refuses
/// events stamped beyond the bound and its clock never takes them in; a store poisoned before
/// that (an event stamped near the end of time, local writes stamped after it) recovers at open.
@Suite("Clock poisoning")
struct ClockPoisoningTests {
    /// 2026-11-25, a fixed wall clock.
    static let now: UInt64 = 1_795_000_000_000
    static let day: UInt64 = 86_400_000
    static let liar = SiteID(0x6666), peer = SiteID(0x7777)
    static let order = DocumentKey("orders", "o1")

    static func options(clock: UInt64 = now) -> Store.Options {
        var options = Store.Options()
        options.physicalClock = { clock }
        return options
    }

    static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("arcus-test-\(UUID().uuidString)")
    }

    /// One write of `fields` to `key`, made by `site` at `time`, as a peer's batch would carry it.
    static func delta(_ fields: [String: Value], at time: Timestamp, by site: SiteID, key: DocumentKey = order) -> DocumentDelta {
        var state = DocumentState()
        _ = state.upsert(fields, at: Stamp(time: time, site: site))
        return DocumentDelta(key: key, state: state)
    }

    static func status(_ store: Store, _ id: String = "o1") throws -> Value? {
        try store.collection("orders").findByID(.string(id)).exec()?[path: ["status"]]
    }

    /// Every event a batch carries, with the times its version vectors and `covers` claim.
    static func latestTime(in batch: DeltaBatch) -> Timestamp {
        var latest = batch.covers?.maxTime ?? .zero
        for document in batch.documents {
            latest = max(latest, document.state.version.maxTime)
            for cell in document.state.cells where cell.kind != .field { latest = max(latest, cell.event.time, cell.order.time) }
        }
        return latest
    }

    // MARK: - The merge path

    @Test("a merged event stamped near the end of time is refused, the clock stays, and a later local write wins")
    func mergeRefusesTheEndOfTime() throws {
        let store = try Store(inMemory: Self.options())
        try store.collection("orders").upsert(["_id": "o1", "status": "open"])
        let bound = store.latestAdmissibleTime
        let poison = Timestamp(rawValue: .max - 5)
        let results = try store.merge(DeltaBatch(documents: [Self.delta(["status": "hacked"], at: poison, by: Self.liar)],
                                                 covers: VersionVector([Self.liar: poison, Self.peer: Timestamp(milliseconds: Self.now - 1)])))
        #expect(results.isEmpty)
        #expect(try Self.status(store) == "open")
        #expect(store.lastTime <= bound)
        // What the batch vouched for the liar is not taken in; what it vouched for others is.
        #expect(store.version[Self.liar] == nil)
        #expect(store.version[Self.peer] == Timestamp(milliseconds: Self.now - 1))
        try store.collection("orders").findByID("o1").update { $0["status"].set("closed") }
        #expect(try Self.status(store) == "closed")
        #expect(store.version[store.site]! <= bound)
    }

    @Test("of a delta part stamped in time and part beyond, the part in time is merged and claims nothing refused")
    func mergeKeepsThePartInTime() throws {
        let store = try Store(inMemory: Self.options())
        var state = DocumentState()
        _ = state.upsert(["status": "open", "qty": 2], at: Stamp(time: Timestamp(milliseconds: Self.now - 10), site: Self.peer))
        _ = state.set(["color"], to: "red", at: Stamp(time: Timestamp(milliseconds: Self.now + 30 * Self.day), site: Self.liar))
        try store.write { tx in try tx.merge(DocumentDelta(key: Self.order, state: state)) }
        #expect(try store.collection("orders").findByID("o1").exec() == ["_id": "o1", "status": "open", "qty": 2])
        var loaded: DocumentState?
        try store.write { tx in loaded = try tx.load(DocumentRows.RowID(Self.order)) }
        let stored = try #require(loaded)
        #expect(stored.version[Self.liar] == nil)
        #expect(store.lastTime < Timestamp(milliseconds: Self.now))
    }

    @Test("a time within the allowance is merged and taken in; the allowance is an option")
    func allowance() throws {
        let ahead = Timestamp(milliseconds: Self.now + 6 * Self.day)
        let lenient = try Store(inMemory: Self.options())
        try lenient.merge(DeltaBatch(documents: [Self.delta(["status": "ahead"], at: ahead, by: Self.peer)]))
        #expect(try Self.status(lenient) == "ahead")
        #expect(lenient.lastTime == ahead)
        // What it stamps a week ahead is overwritten by any write made after it arrived.
        try lenient.collection("orders").findByID("o1").update { $0["status"].set("mine") }
        #expect(try Self.status(lenient) == "mine")

        var options = Self.options()
        options.clockSkewAllowance = .seconds(3600)
        let strict = try Store(inMemory: options)
        #expect(strict.latestAdmissibleTime < ahead)
        try strict.merge(DeltaBatch(documents: [Self.delta(["status": "ahead"], at: ahead, by: Self.peer)]))
        #expect(try Self.status(strict) == nil)
        #expect(strict.lastTime < ahead)
    }

    @Test("a board whose clock went back to 1970 keeps its bound from the highest reading it saved")
    func wallClockMark() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let reading = Mutex(Self.now)
        var options = Store.Options()
        options.physicalClock = { reading.withLock { $0 } }
        do {
            let store = try Store(directory: directory, options: options)
            try store.collection("orders").upsert(["_id": "o1", "status": "open"])
            // Written at most every few minutes: ten minutes on, the next commit saves it.
            reading.withLock { $0 = Self.now + 10 * 60_000 }
            try store.collection("orders").upsert(["_id": "o2", "status": "open"])
        }
        // A power cut; the board boots at 1970 and has no network time yet.
        reading.withLock { $0 = 0 }
        let store = try Store(directory: directory, options: options)
        #expect(store.latestAdmissibleTime >= Timestamp(milliseconds: Self.now + 10 * 60_000 + 7 * Self.day))
        // An honest peer's write of now is not "from the future" to it.
        try store.merge(DeltaBatch(documents: [Self.delta(["status": "peer"], at: Timestamp(milliseconds: Self.now + 20 * 60_000), by: Self.peer)]))
        #expect(try Self.status(store) == "peer")
        // Only the device's own readings raise the mark: a peer's time did not.
        let mark = try DatabaseQueue(path: directory.appendingPathComponent("store.sqlite").path).read { try WallClockMark.load($0) }
        #expect(mark == Self.now + 10 * 60_000)
    }

    // MARK: - A store poisoned before remote times were bounded

    /// A store poisoned the way the finding describes: a liar's event near the end of time merged
    /// (written directly, as the old merge path did), then local writes that a clock which took
    /// it in stamped after it, up to the very last time there is. Returns the store's site.
    static func poisonedStore(at directory: URL) throws -> SiteID {
        let store = try Store(directory: directory, options: options())
        try store.collection("orders").upsert(["_id": "o1", "status": "open", "qty": 0])
        _ = try store.execute("UPDATE COLLECTION orders (qty PN_COUNTER) APPLY qty PN_INCREMENT BY 3 WHERE _id = 'o1'")
        try store.merge(DeltaBatch(documents: [delta(["status": "theirs"], at: Timestamp(milliseconds: now - 5), by: peer,
                                                     key: DocumentKey("orders", "o2"))]))
        let poison = Timestamp(rawValue: .max - 4)
        let site = store.site
        try store.write { tx in
            let row = DocumentRows.RowID(order)
            var state = try #require(try tx.load(row))
            let liarsWrite = delta(["status": "hacked", "owner": "mallory"], at: poison, by: liar).state
            state.join(liarsWrite)
            try tx.save(row, state: state, delta: liarsWrite, wasLive: true, hadAttachments: false, local: false)
        }
        // The poisoned clock stamps the user's next writes after the poison.
        func at(_ offset: UInt64) -> Stamp { Stamp(time: Timestamp(rawValue: poison.rawValue + offset), site: site) }
        try store.write { tx in
            try tx.apply(order) { state, _ in state.set(["status"], to: "closed", at: at(1)) }
            try tx.apply(order) { state, _ in state.increment(["qty"], by: .int(2), at: at(2)) }
            try tx.apply(DocumentKey("orders", "o3")) { state, _ in state.upsert(["status": "mine"], at: at(3)) }
            try tx.apply(order) { state, _ in state.unset(["owner"], at: at(4)) }
        }
        return site
    }

    @Test("a poisoned store recovers at open: local writes win again, the clock is sane, its own values stay, and a peer does not get the poison back")
    func poisonedStoreRecovers() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let site = try Self.poisonedStore(at: directory)

        let (contents, version) = try { () throws -> ([Value], VersionVector) in
        let store = try Store(directory: directory, options: Self.options())
        #expect(store.site == site)
        let bound = store.latestAdmissibleTime
        // The user's own writes made while the clock was poisoned are still there.
        #expect(try store.collection("orders").findByID("o1").exec() == ["_id": "o1", "status": "closed", "qty": 5])
        #expect(try Self.status(store, "o2") == "theirs")
        #expect(try Self.status(store, "o3") == "mine")
        // A local write now wins (a clock left at the end of time would wrap to zero and lose).
        try store.collection("orders").findByID("o1").update { $0["status"].set("reopened") }
        #expect(try Self.status(store) == "reopened")
        #expect(store.lastTime <= bound)
        #expect(store.version.maxTime <= bound)
        // A peer that syncs with it gets the user's data and nothing stamped beyond the bound.
        let batch = try store.changes(after: 0, since: .empty).batch
        #expect(Self.latestTime(in: batch) <= bound)
        let peer = try Store(inMemory: Self.options())
        try peer.merge(batch)
        #expect(try peer.collection("orders").findByID("o1").exec() == ["_id": "o1", "status": "reopened", "qty": 5])
        #expect(try Self.status(peer, "o3") == "mine")
        #expect(peer.lastTime <= bound)

        return (try store.execute("SELECT * FROM orders ORDER BY _id").items, store.version)
        }()
        // Reopened again, it stays as it is.
        let again = try Store(directory: directory, options: Self.options())
        #expect(try again.execute("SELECT * FROM orders ORDER BY _id").items == contents)
        #expect(again.version == version)
    }

    @Test("the recovery is reported once: documents and fields repaired, cells dropped and re-applied, sites lowered")
    func recoveryReport() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try Self.poisonedStore(at: directory)
        do {
            let store = try Store(directory: directory, options: Self.options())
            let recovery = try #require(store.recoveredFromClockPoisoning)
            #expect(recovery.documentCount == 2)
            // The liar wrote o1 as a new document: its presence marker ("") is the one cell of
            // its left to drop ("owner" the user removed, "status" the user overwrote).
            #expect(Set(recovery.documents) == ["orders/\"o1\": \"\", owner, qty, status", "orders/\"o3\": \"\", status"])
            #expect(recovery.cellsDropped == 1)
            // The user's value, counter contribution and removal in o1; o3's marker and value.
            #expect(recovery.cellsReapplied == 5)
            #expect(recovery.sitesLowered.contains(Self.liar) && recovery.sitesLowered.contains(store.site))
            #expect(recovery.clockBefore > recovery.bound && recovery.clockAfter <= recovery.bound)
            #expect(recovery.description.contains("2 document(s) repaired"))
        }
        let again = try Store(directory: directory, options: Self.options())
        #expect(again.recoveredFromClockPoisoning == nil)
    }

    @Test("an older store holding another device's poisoned event, and no trace of it in its clock, is repaired by a one-time check")
    func olderStoreChecked() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try Store(directory: directory, options: Self.options())
            try store.collection("orders").upsert(["_id": "o1", "status": "open"])
            try store.write { tx in
                let row = DocumentRows.RowID(Self.order)
                var state = try #require(try tx.load(row))
                let liarsWrite = Self.delta(["color": "red"], at: Timestamp(rawValue: .max - 4), by: Self.liar).state
                state.join(liarsWrite)
                try tx.save(row, state: state, delta: liarsWrite, wasLive: true, hadAttachments: false, local: false)
            }
        }
        // Made before stores were checked: no mark that it was.
        try DatabaseQueue(path: directory.appendingPathComponent("store.sqlite").path).write { db in
            try db.execute(sql: "DELETE FROM meta WHERE key = 'clock_checked'")
        }
        let store = try Store(directory: directory, options: Self.options())
        #expect(try store.collection("orders").findByID("o1").exec() == ["_id": "o1", "status": "open"])
        let recovery = try #require(store.recoveredFromClockPoisoning)
        // The liar's value and its presence marker.
        #expect(recovery.documentCount == 1 && recovery.cellsDropped == 2 && recovery.cellsReapplied == 0)
        #expect(recovery.sitesLowered == [Self.liar])
        #expect(Self.latestTime(in: try store.changes(after: 0, since: .empty).batch) <= store.latestAdmissibleTime)
    }
}
