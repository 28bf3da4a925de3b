import Logging
import Synchronization

/// Log lines about what others make happen — a failed handshake, a refused link — at a rate no
/// one else controls: for each kind of event, at most `Limits.lines` lines per `Limits.window`;
/// past that, lines are counted instead of written, and once the window is over one line says
/// how many were left out and from how many sources. A stranger opening connections as fast as
/// the network allows thus writes at most `lines + 1` lines per window and kind to the device's
/// flash, and nothing is hidden: the summary and the metrics still count every event.
///
/// Summaries are written when the next line of that kind comes or at `flush()`, which the agent
/// calls every window. All members may be called from any thread.
final class RateLimitedLog: Sendable {
    struct Limits: Sendable {
        /// Lines of one kind per window; the rest are summarised.
        var lines = 10
        var window: Duration = .seconds(60)
        /// Distinct sources remembered per window for the summary; past it the summary says
        /// "at least".
        var sourcesCounted = 1_024
    }

    let limits: Limits
    private let logger: Logger
    private let now: @Sendable () -> ContinuousClock.Instant
    /// Told how many lines of a kind were left out, as each is.
    private let suppressed: @Sendable (_ kind: String) -> Void
    private let state = Mutex<[String: Window]>([:])

    /// One kind of event in the current window.
    private struct Window {
        var start: ContinuousClock.Instant
        var level: Logger.Level
        var written = 0
        var leftOut = 0
        var sources: Set<String> = []
    }

    init(
        logger: Logger, limits: Limits = Limits(), now: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
        suppressed: @escaping @Sendable (_ kind: String) -> Void = { _ in }
    ) {
        self.logger = logger
        self.limits = limits
        self.now = now
        self.suppressed = suppressed
    }

    /// Writes `message` at `level` unless `kind`'s lines for this window are used up; `source` (a
    /// remote address, a peer) is what the summary counts.
    func log(
        _ level: Logger.Level, _ kind: String, _ message: @autoclosure () -> Logger.Message, source: String,
        metadata: @autoclosure () -> Logger.Metadata = [:]
    ) {
        let now = self.now()
        let (writes, summary) = state.withLock { windows -> (Bool, Summary?) in
            var summary: Summary?
            if let window = windows[kind], now - window.start >= limits.window {
                summary = Self.summary(of: kind, window, limits: limits, now: now)
                windows[kind] = nil
            }
            var window = windows[kind] ?? Window(start: now, level: level)
            defer { windows[kind] = window }
            if window.written < limits.lines {
                window.written += 1
                return (true, summary)
            }
            window.leftOut += 1
            if window.sources.count < limits.sourcesCounted { window.sources.insert(source) }
            return (false, summary)
        }
        if let summary { write(summary) }
        if writes {
            logger.log(level: level, message(), metadata: metadata())
        } else {
            suppressed(kind)
        }
    }

    /// Writes the summary of every window that is over; with `all`, of every window (the agent
    /// stopping says what it left out so far).
    func flush(all: Bool = false) {
        let now = self.now()
        let summaries = state.withLock { windows -> [Summary] in
            var summaries: [Summary] = []
            for (kind, window) in windows where all || now - window.start >= limits.window {
                windows[kind] = nil
                if let summary = Self.summary(of: kind, window, limits: limits, now: now) { summaries.append(summary) }
            }
            return summaries
        }
        for summary in summaries.sorted(by: { $0.kind < $1.kind }) { write(summary) }
    }

    private struct Summary {
        var kind: String
        var level: Logger.Level
        var leftOut: Int
        var sources: Int
        var sourcesCapped: Bool
        /// The whole seconds the summary covers: the window, or less when flushed early.
        var span: Int
    }

    private static func summary(of kind: String, _ window: Window, limits: Limits, now: ContinuousClock.Instant) -> Summary? {
        guard window.leftOut > 0 else { return nil }
        let span = min(limits.window, now - window.start)
        return Summary(
            kind: kind, level: window.level, leftOut: window.leftOut, sources: window.sources.count,
            sourcesCapped: window.sources.count >= limits.sourcesCounted, span: Int((span / .seconds(1)).rounded(.up))
        )
    }

    private func write(_ summary: Summary) {
        let sources = "\(summary.sourcesCapped ? "at least " : "")\(summary.sources) source\(summary.sources == 1 ? "" : "s")"
        logger.log(
            level: summary.level,
            "\(summary.kind): \(summary.leftOut) more like this from \(sources) were left out of the log in the last \(summary.span) s (see /metrics)"
        )
    }
}
