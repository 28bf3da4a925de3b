#if canImport(Glibc)
import Glibc
#endif

/// Progress lines on standard error, redrawn in place when it is a terminal.
enum Terminal {
    static let isInteractive = isatty(STDERR_FILENO) != 0

    static func progress(_ what: String, share: Double) {
        let percent = Int((share * 100).rounded())
        if isInteractive {
            writeError("\r\(what): \(percent)%\u{1B}[K")
        } else if percent % 25 == 0 {
            writeError("\(what): \(percent)%\n")
        }
    }

    /// A line of progress that changes as work goes on: redrawn in place on a terminal,
    /// otherwise written at most once a second (a log keeps every line).
    struct ProgressLine {
        private var lastWritten: ContinuousClock.Instant?

        init() {}

        mutating func show(_ text: String) {
            if Terminal.isInteractive {
                Terminal.writeError("\r\(text)\u{1B}[K")
                return
            }
            let now = ContinuousClock.now
            if let lastWritten, now - lastWritten < .seconds(1) { return }
            lastWritten = now
            Terminal.writeError(text + "\n")
        }
    }

    static func clearProgress() {
        if isInteractive { writeError("\r\u{1B}[K") }
    }

    static func writeError(_ text: String) {
        var text = text
        text.withUTF8 { bytes in _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
    }
}
