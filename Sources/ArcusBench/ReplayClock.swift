import ArcusAgent
import ArcusCRDT
import Synchronization

/// The time a trace replay runs on. Stamps encode differences of milliseconds, so on the wall
/// clock a slower replay would send more bytes; here the trace's operations happen 40 to the
/// millisecond (the pace of the in-memory replay on this machine), however fast the replay
/// actually goes, and the figures are the same on every run.
final class ReplayClock: Sendable {
    static let operationsPerMillisecond: UInt64 = 40
    /// 2026-01-01T00:00:00Z.
    static let start: UInt64 = 1_767_225_600_000

    private let operations = Atomic<UInt64>(0)

    /// Moves time on by one operation.
    func advance() { operations.add(1, ordering: .relaxed) }

    /// The clock replicas' hybrid logical clocks read.
    var physical: HybridLogicalClock.PhysicalClock {
        { [self] in Self.start + operations.load(ordering: .relaxed) / Self.operationsPerMillisecond }
    }
}
