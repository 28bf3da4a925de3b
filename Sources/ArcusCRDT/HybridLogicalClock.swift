#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A hybrid logical clock (Kulkarni et al., 2014): readings follow the wall clock where it is
/// ahead, and otherwise count on logically, so that every reading is larger than every reading
/// this replica produced or observed before. That is what makes "causally after" also mean
/// "later" for last-writer-wins.
public struct HybridLogicalClock: Sendable {
    /// Milliseconds since the Unix epoch; injectable so tests and replays can control time.
    public typealias PhysicalClock = @Sendable () -> UInt64

    public private(set) var last: Timestamp
    private let physical: PhysicalClock

    public init(last: Timestamp = .zero, physical: @escaping PhysicalClock = HybridLogicalClock.wallClock) {
        self.last = last
        self.physical = physical
    }

    /// A reading for a local event, larger than any before.
    public mutating func tick() -> Timestamp {
        let wall = Timestamp(milliseconds: physical())
        // Past 65535 logical steps in one millisecond the counter carries into the milliseconds,
        // which keeps readings strictly increasing.
        last = wall > last ? wall : Timestamp(rawValue: last.rawValue &+ 1)
        return last
    }

    /// Takes in a reading from another replica, so later local readings order after it.
    public mutating func observe(_ remote: Timestamp) {
        if remote > last { last = remote }
    }

    public static let wallClock: PhysicalClock = {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return UInt64(spec.tv_sec) * 1000 + UInt64(spec.tv_nsec) / 1_000_000
    }
}
