import Glibc

/// Nanoseconds on CLOCK_MONOTONIC, for the link threads' pacing (no Swift clocks off the pool).
enum MonotonicClock {
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
