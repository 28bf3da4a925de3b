@testable import ArcusAgent
import Logging
import Synchronization
import Testing

/// Lines about what others make happen, at a rate they do not control: on a clock the test moves.
@Suite("Rate-limited log lines")
struct RateLimitedLogTests {
    final class TestClock: Sendable {
        private let instant = Mutex(ContinuousClock.now)
        var now: ContinuousClock.Instant { instant.withLock { $0 } }
        func advance(_ duration: Duration) { instant.withLock { $0 += duration } }
    }

    /// Every line a logger wrote, as text.
    final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    struct CapturingHandler: LogHandler {
        let lines: Lines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String, function: String, line: UInt) {
            lines.append("\(level) \(message)")
        }
    }

    final class Counter: Sendable {
        private let value = Mutex(0)
        func increment() { value.withLock { $0 += 1 } }
        var count: Int { value.withLock { $0 } }
    }

    static func log(lines: Int = 3) -> (RateLimitedLog, TestClock, Lines, Counter) {
        let clock = TestClock()
        let captured = Lines()
        let leftOut = Counter()
        var limits = RateLimitedLog.Limits()
        limits.lines = lines
        limits.window = .seconds(60)
        let logger = Logger(label: "test") { _ in CapturingHandler(lines: captured) }
        let log = RateLimitedLog(logger: logger, limits: limits, now: { clock.now }, suppressed: { _ in leftOut.increment() })
        return (log, clock, captured, leftOut)
    }

    @Test("a flood of one kind writes N lines a window, then one summary saying how many were left out, from how many sources")
    func floodIsSummarised() {
        let (log, clock, lines, leftOut) = Self.log(lines: 3)
        for index in 0..<1_000 {
            log.log(.warning, "handshake failed", "handshake failed #\(index)", source: "10.0.0.\(index % 7)")
        }
        #expect(lines.all == ["warning handshake failed #0", "warning handshake failed #1", "warning handshake failed #2"])
        #expect(leftOut.count == 997)

        log.flush()
        #expect(lines.all.count == 3, "the window is not over yet: no summary")
        clock.advance(.seconds(60))
        log.flush()
        #expect(lines.all.count == 4)
        #expect(lines.all.last == "warning handshake failed: 997 more like this from 7 sources were left out of the log in the last 60 s (see /metrics)")
        log.flush()
        #expect(lines.all.count == 4, "a summary is written once")
    }

    @Test("kinds are limited apart, and a new window starts with the summary of the last")
    func kindsAndWindows() {
        let (log, clock, lines, _) = Self.log(lines: 2)
        for _ in 0..<5 { log.log(.warning, "handshake failed", "failed", source: "a") }
        for _ in 0..<5 { log.log(.notice, "refused a link", "refused", source: "b") }
        #expect(lines.all == ["warning failed", "warning failed", "notice refused", "notice refused"])

        clock.advance(.seconds(61))
        log.log(.warning, "handshake failed", "failed again", source: "a")
        #expect(lines.all.suffix(2) == [
            "warning handshake failed: 3 more like this from 1 source were left out of the log in the last 60 s (see /metrics)",
            "warning failed again",
        ])
        log.flush()
        #expect(lines.all.last?.hasPrefix("notice refused a link: 3 more") == true, "\(lines.all)")
    }

    @Test("when the agent stops, what was left out so far is summarised at once")
    func stoppingFlushesEverything() {
        let (log, clock, lines, _) = Self.log(lines: 1)
        for _ in 0..<4 { log.log(.warning, "handshake failed", "failed", source: "a") }
        clock.advance(.seconds(12))
        log.flush()
        #expect(lines.all == ["warning failed"], "the window is not over")
        log.flush(all: true)
        #expect(lines.all.last == "warning handshake failed: 3 more like this from 1 source were left out of the log in the last 12 s (see /metrics)")
    }

    @Test("an hour of flooding writes a bounded number of lines, whatever the rate")
    func boundedOverTime() {
        let (log, clock, lines, leftOut) = Self.log(lines: 10)
        for second in 0..<3_600 {
            for index in 0..<50 { log.log(.warning, "handshake failed", "x", source: "\(index)") }
            clock.advance(.seconds(1))
            if second % 60 == 59 { log.flush() }
        }
        // 60 windows, each at most 10 lines and one summary.
        #expect(lines.all.count <= 60 * 11)
        #expect(leftOut.count == 3_600 * 50 - 60 * 10)
    }
}
