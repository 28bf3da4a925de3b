#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A hybrid logical clock (Kulkarni et al., 2014): readings follow the wall clock where it is
/// ahead, and otherwise count on logically, so that every reading is larger than every reading
/// this replica produced or observed before. That is what makes "causally after" also mean
/// "later" for last-writer-wins.
///
/// A remote reading moves the clock only up to a bound its owner gives (`observe(_:through:)`):
/// taking in any time a peer claims would let one event stamped near the end of time drag every
/// later local write there, and past it. Readings never wrap: at `Timestamp.max` the clock has
/// no later reading and `tick` throws.
public struct HybridLogicalClock: Sendable {
    /// Milliseconds since the Unix epoch; injectable so tests and replays can control time.
    public typealias PhysicalClock = @Sendable () -> UInt64

    /// `tick` found the clock at `Timestamp.max`: there is no later reading to give.
    public struct Exhausted: Error, Sendable, CustomStringConvertible {
        public var last: Timestamp
        public var description: String {
            "the clock is at \(last), the last time a timestamp can hold, so no later write can be ordered"
        }
    }

    public private(set) var last: Timestamp
    private let physical: PhysicalClock

    public init(last: Timestamp = .zero, physical: @escaping PhysicalClock = HybridLogicalClock.wallClock) {
        self.last = last
        self.physical = physical
    }

    /// A reading for a local event, larger than any before. Past 65535 logical steps in one
    /// millisecond the counter carries into the milliseconds; at `Timestamp.max` there is no
    /// larger reading and it throws, leaving the clock as it was.
    public mutating func tick() throws(Exhausted) -> Timestamp {
        let wall = Timestamp(clampingMilliseconds: physical())
        if wall > last {
            last = wall
        } else {
            guard last < .max else { throw Exhausted(last: last) }
            last = Timestamp(rawValue: last.rawValue + 1)
        }
        return last
    }

    /// Takes in a reading from another replica, so later local readings order after it — unless
    /// it is later than `latest`: then the clock stays where it is, and this returns false.
    @discardableResult
    public mutating func observe(_ remote: Timestamp, through latest: Timestamp) -> Bool {
        guard remote <= latest else { return false }
        if remote > last { last = remote }
        return true
    }

    /// `CLOCK_REALTIME` in milliseconds; a time before 1970 reads as 0, one past UInt64 as its max.
    public static let wallClock: PhysicalClock = {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        let (milliseconds, overflow) = UInt64(clamping: spec.tv_sec).multipliedReportingOverflow(by: 1000)
        guard !overflow, milliseconds < .max - 1000 else { return .max }
        return milliseconds + UInt64(clamping: spec.tv_nsec) / 1_000_000
    }
}
