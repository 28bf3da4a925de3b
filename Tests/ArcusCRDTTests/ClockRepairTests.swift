import ArcusTestSupport
import Testing
@testable import ArcusCRDT

/// `DocumentState.repairingClock`: a document that took in events stamped far ahead keeps what
/// is sane, drops other sites' poisoned cells, and re-does this site's own with fresh stamps.
@Suite("Repairing a poisoned clock")
struct ClockRepairTests {
    static let own = SiteID(0x0A), peer = SiteID(0x0B), liar = SiteID(0x0C)
    static let bound = Timestamp(milliseconds: 1_000_000)
    /// Near the end of time, as a liar stamps.
    static let poison = Timestamp(rawValue: .max - 1_000)

    static func at(_ ms: UInt64, _ site: SiteID) -> Stamp { Stamp(time: Timestamp(milliseconds: ms), site: site) }
    static func poisoned(_ offset: UInt64, _ site: SiteID) -> Stamp { Stamp(time: Timestamp(rawValue: poison.rawValue + offset), site: site) }

    /// A clock restarted at `from`, for the fresh stamps.
    final class Fresh {
        var clock: HybridLogicalClock
        init(from: UInt64) { clock = HybridLogicalClock(last: Timestamp(milliseconds: from), physical: { 0 }) }
        func next() throws -> Timestamp { try clock.tick() }
    }

    @Test("this site's value written after the poison is kept with a fresh stamp; the liar's value is dropped")
    func ownValueKept() throws {
        var state = DocumentState()
        _ = state.upsert(["status": "open", "note": "n"], at: Self.at(500, Self.peer))
        _ = state.set(["status"], to: "hacked", at: Self.poisoned(0, Self.liar))
        // Our clock took the poison in: our next write is stamped after it.
        _ = state.set(["status"], to: "closed", at: Self.poisoned(1, Self.own))
        _ = state.set(["owner"], to: "ann", at: Self.poisoned(2, Self.own))
        let fresh = Fresh(from: 600)
        let repair = try #require(try state.repairingClock(through: Self.bound, site: Self.own, fresh: fresh.next))
        #expect(repair.state.value == ["status": "closed", "note": "n", "owner": "ann"])
        #expect(!repair.state.hasTimes(after: Self.bound))
        #expect(repair.reappliedCount == 2 && repair.droppedCount == 0)
        // The liar's value was superseded by ours before the repair: nothing of it is left.
        #expect(repair.state.cells.allSatisfy { $0.kind == .field || $0.event.site != Self.liar })
        #expect(repair.state.version[Self.own] == Timestamp(milliseconds: 600, logical: 2))
        #expect(repair.state.version[Self.liar] == nil)
        #expect(repair.state.version[Self.peer] == Timestamp(milliseconds: 500))
        #expect(repair.fields == ["owner", "status"])
        // The re-applied writes are a delta of their own: a peer that never took the poison in
        // reaches the same state with it.
        var other = state.admitting(sites: { _ in true }, through: Self.bound).admitted
        other.join(try #require(repair.reapplied))
        #expect(other.value == repair.state.value)
        // Repairing again finds nothing.
        #expect(try repair.state.repairingClock(through: Self.bound, site: Self.own, fresh: fresh.next) == nil)
    }

    @Test("another site's poisoned value is dropped, and what it overwrote stays gone until that site re-applies")
    func othersDropped() throws {
        var state = DocumentState()
        _ = state.upsert(["status": "open"], at: Self.at(500, Self.peer))
        _ = state.set(["color"], to: "red", at: Self.poisoned(0, Self.liar))
        let repair = try #require(try state.repairingClock(through: Self.bound, site: Self.own, fresh: Fresh(from: 600).next))
        #expect(repair.state.value == ["status": "open"])
        #expect(repair.droppedCount == 1 && repair.reappliedCount == 0 && repair.reapplied == nil)
        #expect(repair.sitesLowered == [Self.liar])
        #expect(repair.state.version[Self.liar] == nil)
    }

    @Test("this site's removal of a poisoned value is done again, at its fresh time: an older value does not come back")
    func removalDoneAgain() throws {
        var state = DocumentState()
        let older = state.upsert(["status": "open"], at: Self.at(500, Self.peer))!
        _ = state.set(["status"], to: "hacked", at: Self.poisoned(0, Self.liar))
        _ = state.unset(["status"], at: Self.poisoned(1, Self.own))
        let repair = try #require(try state.repairingClock(through: Self.bound, site: Self.own, fresh: Fresh(from: 600).next))
        #expect(repair.state.value == [:])
        // The peer that wrote "open" sends it again: the re-done removal still removes it.
        var after = repair.state
        after.join(older)
        #expect(after.value == [:])
        // A write made after the repair recreates the field.
        _ = after.set(["status"], to: "new", at: Self.at(700, Self.peer))
        #expect(after.value == ["status": "new"])
    }

    @Test("this site's counter contribution made after the poison is made again, whole")
    func counterContribution() throws {
        var state = DocumentState()
        let sane = state.increment(["visits"], by: .int(3), at: Self.at(500, Self.own))!
        _ = state.increment(["visits"], by: .int(10), at: Self.at(510, Self.peer))
        _ = state.set(["color"], to: "red", at: Self.poisoned(0, Self.liar))
        _ = state.increment(["visits"], by: .int(2), at: Self.poisoned(1, Self.own))
        #expect(state.value?[path: ["visits"]] == .int(15))
        let repair = try #require(try state.repairingClock(through: Self.bound, site: Self.own, fresh: Fresh(from: 600).next))
        #expect(repair.state.value == ["visits": .int(15)])
        // A peer holding only our earlier contribution gets the whole of ours (3 + 2), not 2 more.
        var peer = sane
        peer.join(try #require(repair.reapplied))
        #expect(peer.value == ["visits": .int(5)])
    }

    @Test("default data keeps its order at zero; a write the wrapped clock stamped at zero is re-stamped")
    func defaultsAndWrappedWrites() throws {
        var state = DocumentState()
        _ = state.upsert(["name": "Adam"], strategy: .insertDefaultIfAbsent, at: Self.poisoned(1, Self.own))
        _ = state.set(["note"], to: "after the wrap", at: Stamp(time: .zero, site: Self.own))
        let repair = try #require(try state.repairingClock(through: Self.bound, site: Self.own, fresh: Fresh(from: 600).next))
        let name = try #require(repair.state.slot(at: ["name"])?.register)
        #expect(name.order.time == .zero && name.event.time > .zero && name.event.time <= Self.bound)
        let note = try #require(repair.state.slot(at: ["note"])?.register)
        #expect(note.order.time > .zero && note.order == note.event)
        // A real write from anywhere still wins over the defaults.
        var later = repair.state
        _ = later.set(["name"], to: "Max", at: Self.at(550, Self.peer))
        #expect(later.value?[path: ["name"]] == "Max")
    }

    /// A document that three sites wrote to, one shared state (every write saw every earlier
    /// one, as hybrid clocks make it): somewhere a write is stamped near the end of time, and
    /// every write after it is stamped after it.
    static func poisonedDocument(_ rng: inout SeededRandom, onlyOwnAfterPoison: Bool) -> DocumentState {
        var state = DocumentState()
        var time = Timestamp(milliseconds: 1_000)
        let poisonAt = Int.random(in: 0..<20, using: &rng)
        let sites = [own, peer, liar]
        for step in 0..<Int.random(in: 20...40, using: &rng) {
            var site = sites.randomElement(using: &rng)!
            if step == poisonAt {
                time = Timestamp(rawValue: .max - 1_000_000 + UInt64.random(in: 0...1_000, using: &rng))
                if onlyOwnAfterPoison { site = own }
            } else {
                if step > poisonAt && onlyOwnAfterPoison { site = own }
                time = Timestamp(rawValue: time.rawValue + UInt64.random(in: 1...3, using: &rng))
            }
            _ = RandomMutations.mutate(&state, at: Stamp(time: time, site: site), &rng)
        }
        return state
    }

    @Test("when only this site wrote after the poison, readers see exactly what they saw", arguments: SeededRandom.seeds(count: 60, test: "clock-repair-own"))
    func ownOnlyKeepsTheView(seed: UInt64) throws {
        print("clock-repair-own seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let state = Self.poisonedDocument(&rng, onlyOwnAfterPoison: true)
        guard let repair = try state.repairingClock(through: Self.bound, site: Self.own, fresh: Fresh(from: 5_000).next) else { return }
        #expect(repair.state.value?.jsonString == state.value?.jsonString, "seed \(seed)")
        #expect(repair.droppedCount == 0, "seed \(seed)")
    }

    @Test("a repair keeps nothing beyond the bound, is final, and a peer that refused the poison catches up by its delta", arguments: SeededRandom.seeds(count: 60, test: "clock-repair"))
    func repairIsSound(seed: UInt64) throws {
        print("clock-repair seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let state = Self.poisonedDocument(&rng, onlyOwnAfterPoison: false)
        let fresh = Fresh(from: 5_000)
        guard let repair = try state.repairingClock(through: Self.bound, site: Self.own, fresh: fresh.next) else {
            #expect(!state.hasTimes(after: Self.bound), "seed \(seed)")
            return
        }
        #expect(!repair.state.hasTimes(after: Self.bound), "seed \(seed): something beyond the bound was kept")
        #expect(try repair.state.repairingClock(through: Self.bound, site: Self.own, fresh: fresh.next) == nil, "seed \(seed)")
        // Every cell kept is a sane one of the state, or one of this site's re-stamped.
        let sane = state.admitting(sites: { _ in true }, through: Self.bound).admitted
        let ownPoisoned = state.cells.filter { $0.kind != .field && $0.event.site == Self.own && ($0.event.time > Self.bound || $0.order.time > Self.bound) }
        let othersPoisoned = state.cells.filter { $0.kind != .field && $0.event.site != Self.own && ($0.event.time > Self.bound || $0.order.time > Self.bound) }
        #expect(repair.reappliedCount == ownPoisoned.count && repair.droppedCount == othersPoisoned.count, "seed \(seed)")
        // The version covers every event kept, and claims no site beyond what is kept of it.
        let held = repair.state.eventVersion
        repair.state.forEachEvent { #expect(repair.state.version.contains($0), "seed \(seed): \($0) is not covered") }
        var touched = Set((ownPoisoned + othersPoisoned).map(\.event.site))
        for element in state.version.elements where element.time > Self.bound { touched.insert(element.site) }
        for element in repair.state.version.elements where touched.contains(element.site) {
            #expect(held[element.site].map { element.time <= $0 } == true,
                    "seed \(seed): \(element.site) is claimed to \(element.time), beyond what is kept of it (\(repair.state.version) over \(held))")
        }
        // A peer that refused the poison (it holds the sane part) reaches the repaired state with
        // the re-applied writes alone.
        var peer = sane
        if let delta = repair.reapplied { peer.join(delta) }
        #expect(peer.value?.jsonString == repair.state.value?.jsonString, "seed \(seed): the peer did not catch up")
        peer.version = repair.state.version
        #expect(peer == repair.state, "seed \(seed)")
    }
}
