/// Updates timed one at a time, from just before each write until an observer on the far side
/// reports that round: the latency a user sees between writing on one device and seeing it on
/// another.
enum UpdateRounds {
    /// How long an update may take to be seen before the bench gives up.
    static let patience: Duration = .seconds(30)

    /// Runs `rounds` rounds of `write(round)`; each waits until `seen` (what `rounds` are
    /// reported to, through `observed`) yields that round, then pauses `pause`. Sorted.
    static func time(
        _ rounds: Int, pause: Duration, observed: AsyncStream<Int64>.Continuation, seen: inout AsyncStream<Int64>.Iterator,
        describe: String, progress: ((String, Double) -> Void)?,
        beforeEach: () -> Void = {}, write: (Int64) async throws -> Void
    ) async throws -> Latencies {
        var latencies: [Double] = []
        for round in 0..<Int64(rounds) {
            beforeEach()
            let written = monotonicSeconds()
            try await write(round)
            // Past the patience, the stream is finished and the bench gives up.
            let watchdog = Task {
                try await Task.sleep(for: patience)
                observed.finish()
            }
            while true {
                guard let value = await seen.next() else {
                    throw BenchError("update \(round) did not reach the follower within \(patience)")
                }
                if value == round { break }
            }
            watchdog.cancel()
            latencies.append(monotonicSeconds() - written)
            progress?(describe, Double(round + 1) / Double(rounds))
            try await Task.sleep(for: pause)
        }
        return Latencies(latencies)
    }
}
