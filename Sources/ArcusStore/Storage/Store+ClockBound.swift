import ArcusCRDT

extension Store {
    /// How far ahead of this device's clock a remote event may be stamped and still be taken in.
    public static let defaultClockSkewAllowance: Duration = .seconds(7 * 24 * 3600)

    /// The latest time a remote event may carry to be merged: this device's wall clock plus the
    /// skew allowance. A later one would win every last-writer-wins comparison (and drag the
    /// clock) until this clock catches up, so sync refuses it.
    public var latestAdmissibleTime: Timestamp {
        let allowance = UInt64(Self.defaultClockSkewAllowance.components.seconds) * 1000
        return Timestamp(milliseconds: physicalClock() &+ allowance)
    }
}
