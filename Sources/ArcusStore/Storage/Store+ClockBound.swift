import ArcusCRDT

extension Store {
    /// How far ahead of this device's clock a remote event may be stamped and still be taken
    /// in, unless `Options.clockSkewAllowance` says otherwise: a week. A board without a
    /// real-time clock that was switched off for a week and has no network time yet lags its
    /// peers by that much, so their writes look a week ahead to it; a liar can push clocks at
    /// most this far ahead, and what it stamps so is overwritten by any write made after it
    /// arrived (the clock takes it in).
    public static let defaultClockSkewAllowance: Duration = .seconds(7 * 24 * 3600)

    /// The latest time a remote event may carry to be merged (and taken in by the clock): the
    /// later of this device's wall clock and the highest reading of it the store has kept
    /// (`WallClockMark`), plus the skew allowance. A later one would win every last-writer-wins
    /// comparison, and drag every later local write after it, until the real time caught up —
    /// for a time near 2^64, never — so merging refuses it.
    public var latestAdmissibleTime: Timestamp {
        Self.latestAdmissibleTime(wallClock: wallClockMark.withLock { $0.read(physicalClock) }, allowance: clockSkewAllowance)
    }

    /// The last reading within `allowance` of `wallClock` (milliseconds), never past the end of
    /// time.
    static func latestAdmissibleTime(wallClock: UInt64, allowance: Duration) -> Timestamp {
        let (sum, overflow) = wallClock.addingReportingOverflow(milliseconds(allowance))
        let limit = overflow ? Timestamp.maxMilliseconds : min(sum, Timestamp.maxMilliseconds)
        return Timestamp(milliseconds: limit, logical: .max)
    }

    /// A duration in whole milliseconds; a negative one is zero.
    static func milliseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1000)
        let (total, carry) = whole.addingReportingOverflow(UInt64(max(attoseconds, 0) / 1_000_000_000_000_000))
        return overflow || carry ? .max : total
    }

    /// Raises the kept wall-clock mark in `transaction`, at most every few minutes.
    func persistWallClockMarkIfDue(_ transaction: WriteTransaction) throws {
        guard let mark = wallClockMark.withLock({ mark -> UInt64? in
            _ = mark.read(physicalClock)
            return mark.due
        }) else { return }
        try WallClockMark.save(mark, transaction.connection)
        transaction.afterCommit { [self] in wallClockMark.withLock { $0.didPersist(mark) } }
    }
}
