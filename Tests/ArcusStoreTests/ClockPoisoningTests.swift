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
}
