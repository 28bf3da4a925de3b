import Testing
@testable import ArcusCRDT

/// The hybrid logical clock at its edges: it never wraps, and a remote time beyond the bound
/// its owner gives does not move it.
@Suite("Hybrid logical clock")
struct HybridLogicalClockTests {
    @Test("readings follow the wall clock when it is ahead, and count on logically when it is not")
    func followsTheWallClock() throws {
        var clock = HybridLogicalClock(physical: { 5_000 })
        let reading1 = try clock.tick()
        #expect(reading1 == Timestamp(milliseconds: 5_000))
        let reading2 = try clock.tick()
        #expect(reading2 == Timestamp(milliseconds: 5_000, logical: 1))
        let reading3 = try clock.tick()
        #expect(reading3 == Timestamp(milliseconds: 5_000, logical: 2))
    }

    @Test("past 65535 logical steps in a millisecond the counter carries into the milliseconds")
    func logicalCarry() throws {
        var clock = HybridLogicalClock(last: Timestamp(milliseconds: 9_000, logical: .max), physical: { 9_000 })
        let reading4 = try clock.tick()
        #expect(reading4 == Timestamp(milliseconds: 9_001, logical: 0))
        let reading5 = try clock.tick()
        #expect(reading5 == Timestamp(milliseconds: 9_001, logical: 1))
    }

    @Test("at the last reading there is, tick throws and the clock stays; it never wraps to zero")
    func neverWraps() throws {
        var clock = HybridLogicalClock(last: Timestamp(rawValue: .max - 1), physical: { 1_700_000_000_000 })
        let reading6 = try clock.tick()
        #expect(reading6 == .max)
        #expect(throws: HybridLogicalClock.Exhausted.self) { try clock.tick() }
        #expect(clock.last == .max)
        #expect(throws: HybridLogicalClock.Exhausted.self) { try clock.tick() }
    }

    @Test("a wall clock beyond what a timestamp holds reads as its last millisecond, not as a time near 1970")
    func wallClockBeyondTheEnd() throws {
        // 2^48 ms shifted into the high 48 bits would lose its top bit and wrap to 5 ms.
        var clock = HybridLogicalClock(physical: { (1 << 48) + 5 })
        let reading7 = try clock.tick()
        #expect(reading7 == Timestamp(milliseconds: Timestamp.maxMilliseconds))
        var huge = HybridLogicalClock(physical: { .max })
        let reading8 = try huge.tick()
        #expect(reading8.milliseconds == Timestamp.maxMilliseconds)
        #expect(Timestamp(clampingMilliseconds: .max) == Timestamp(milliseconds: Timestamp.maxMilliseconds))
    }

    @Test("a remote time within the bound moves the clock; one beyond it does not")
    func observeIsBounded() throws {
        let bound = Timestamp(milliseconds: 10_000)
        var clock = HybridLogicalClock(physical: { 1_000 })
        let taken1 = clock.observe(Timestamp(milliseconds: 10_000), through: bound)
        #expect(taken1)
        #expect(clock.last == Timestamp(milliseconds: 10_000))
        let taken2 = clock.observe(Timestamp(rawValue: .max - 3), through: bound)
        #expect(!taken2)
        let taken3 = clock.observe(Timestamp(milliseconds: 10_001), through: bound)
        #expect(!taken3)
        #expect(clock.last == Timestamp(milliseconds: 10_000))
        // The next local reading orders after what was taken in, not after what was refused.
        let reading9 = try clock.tick()
        #expect(reading9 == Timestamp(milliseconds: 10_000, logical: 1))
        // An earlier remote time leaves the clock where it is.
        let taken4 = clock.observe(Timestamp(milliseconds: 2_000), through: bound)
        #expect(taken4)
        #expect(clock.last == Timestamp(milliseconds: 10_000, logical: 1))
    }
}
