import Foundation
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Whether standard error is systemd's journal stream: systemd sets `JOURNAL_STREAM` to the
/// device and inode of the stream it connected (systemd.exec(5)), and a line there that begins
/// with `<N>` is logged at syslog priority N (sd-daemon(3)). Under systemd the journal then keeps,
/// rotates and serves the agent's log; nothing else needs to.
public enum JournalStream {
    public static func isStandardError(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(STDERR_FILENO, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }

    /// The syslog priority (sd-daemon(3)) of a swift-log level.
    public static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}
