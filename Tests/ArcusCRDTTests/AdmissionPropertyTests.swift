import Testing
import ArcusTestSupport
@testable import ArcusCRDT

/// `DocumentState.admitting(sites:through:)`: what a receiver takes of a delta it trusts only in
/// part. The part must be a sub-delta (nothing added), must not claim in its version what it left
/// out, and must leave the receiver able to catch up exactly through `changes(since:)` — the way
/// sync sends a document — once the rest arrives from someone it trusts.
@Suite("Admitting part of a delta")
struct AdmissionPropertyTests {
    static let sites = (1...4).map { SiteID(UInt64($0) * 0x0101_0101) }

    /// A document four sites wrote to at random, some of them far ahead in time.
    static func document(_ rng: inout SeededRandom) -> DocumentState {
        var state = DocumentState()
        var clocks = sites.map { _ in UInt64(1_000) }
        for _ in 0..<Int.random(in: 1...40, using: &rng) {
            let s = Int.random(in: 0..<sites.count, using: &rng)
            clocks[s] = max(clocks.max()!, clocks[s]) + UInt64.random(in: 0...3, using: &rng)
            // One write in ten comes from a clock a long way ahead.
            let ahead: UInt64 = Int.random(in: 0..<10, using: &rng) == 0 ? 1_000_000 : 0
            let stamp = Stamp(time: Timestamp(milliseconds: clocks[s] + ahead, logical: 0), site: sites[s])
            _ = RandomMutations.mutate(&state, at: stamp, &rng)
        }
        return state
    }

    @Test("the admitted part is a sub-delta, claims nothing it dropped, and the rest catches up", arguments: SeededRandom.seeds(count: 60, test: "admission"))
    func admittedPartIsSound(seed: UInt64) {
        print("admission seed: \(seed)  (replay: ARCUS_TEST_SEED=\(seed))")
        var rng = SeededRandom(seed: seed)
        let full = Self.document(&rng)
        // The receiver already holds an earlier part of the document (from the same writers).
        let receiverStart = full.restricted(to: VersionVector(Dictionary(uniqueKeysWithValues: Self.sites.map {
            ($0, Timestamp(milliseconds: UInt64.random(in: 1_000...1_020, using: &rng)))
        })))
        let trusted = Set(Self.sites.filter { _ in Bool.random(using: &rng) })
        let latest = Timestamp(milliseconds: 500_000)
        let admission = full.admitting(sites: { trusted.contains($0) }, through: latest)
        let part = admission.admitted

        // Nothing added: the part joined into the full state changes nothing.
        #expect(full.joined(part) == full, "seed \(seed): the admitted part holds something the delta did not")
        // Every cell kept is from a trusted site and in time.
        part.forEachEvent { stamp in
            #expect(trusted.contains(stamp.site) && stamp.time <= latest, "seed \(seed): \(stamp) was admitted")
        }
        // The version claims no refused event, so no one would hold back sending it again.
        full.forEachEvent { stamp in
            if !trusted.contains(stamp.site) || stamp.time > latest {
                #expect(!part.version.contains(stamp), "seed \(seed): the part's version claims refused event \(stamp)")
            }
        }
        for element in part.version.elements {
            #expect(trusted.contains(element.site) && element.time <= latest)
        }
        // A site with an event refused for its time is claimed only up to its latest event kept
        // (its store may re-stamp the refused ones below `latest` when it recovers).
        var late = Set<SiteID>()
        for cell in full.cells where cell.kind != .field && (cell.event.time > latest || cell.order.time > latest) { late.insert(cell.event.site) }
        for element in full.version.elements where element.time > latest { late.insert(element.site) }
        let held = part.eventVersion
        for element in part.version.elements where late.contains(element.site) {
            #expect(held[element.site].map { element.time <= $0 } == true, "seed \(seed): \(element.site) is claimed beyond what was kept of it")
        }
        #expect(admission.isWhole == (part == full))

        // Catching up the way sync does: the sender sends what the receiver's version lacks.
        var receiver = receiverStart.joined(part)
        if let rest = full.changes(since: receiver.version) { receiver.join(rest) }
        #expect(receiver.value?.jsonString == receiverStart.joined(full).value?.jsonString, "seed \(seed): the receiver did not catch up")
        #expect(receiver.joined(full) == receiverStart.joined(full).joined(receiver))
    }

    @Test("a delta every site may write, in time, is admitted whole and not copied")
    func wholeDelta() {
        var rng = SeededRandom(seed: 7)
        var state = DocumentState()
        _ = RandomMutations.mutate(&state, at: Stamp(time: Timestamp(milliseconds: 10), site: Self.sites[0]), &rng)
        let admission = state.admitting(sites: { _ in true }, through: Timestamp(milliseconds: 11))
        #expect(admission.isWhole)
        #expect(admission.admitted == state)
    }

    @Test("a removal of a value stamped far ahead is refused with it")
    func removalOfFutureValue() {
        let writer = Self.sites[0], remover = Self.sites[1]
        var state = DocumentState()
        let future = Stamp(time: Timestamp(milliseconds: 9_000_000), site: writer)
        _ = state.set(["color"], to: .string("red"), at: future)
        _ = state.unset(["color"], at: Stamp(time: Timestamp(milliseconds: 9_000_001), site: remover))
        // The remover's clock took in the future time; a receiver whose bound is lower refuses
        // both, or the removal (ordered at the future time) would keep every later write removed.
        let admission = state.admitting(sites: { _ in true }, through: Timestamp(milliseconds: 5_000))
        #expect(admission.admitted.isEmpty)
        #expect(admission.refusedForTime)
        // Nor does it claim either site up to its bound: it keeps nothing of them, and a site
        // whose store recovers from the poisoned time re-stamps its writes below the bound,
        // which a claim up to the bound would keep from ever being sent.
        #expect(!admission.admitted.version.contains(future))
        #expect(admission.admitted.version[writer] == nil && admission.admitted.version[remover] == nil)
    }
}
