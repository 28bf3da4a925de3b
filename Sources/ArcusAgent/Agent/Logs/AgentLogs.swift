import Foundation
import Logging
import Synchronization

/// Where the agent's log goes besides standard error, and where `GET /v1/logs` reads it: the
/// journal under systemd, else rotating files in the data directory, opened once the agent holds
/// the directory (a second agent refused the directory must not write into the first's log).
public final class AgentLogs: Sendable {
    public enum Destination: Sendable {
        /// Standard error is the journal: `journalctl` serves the log.
        case journal
        /// `DATA/logs`, once opened.
        case files
    }

    public let destination: Destination
    private let file = Mutex<RotatingLogFile?>(nil)

    public init(journal: Bool = JournalStream.isStandardError()) {
        destination = journal ? .journal : .files
    }

    /// The agent's logger at `level`: to the journal with priorities, or to standard error and
    /// the log files.
    public func logger(level: Logger.Level) -> Logger {
        var logger = Logger(label: "arcus.agent") { [self] label in
            switch destination {
            case .journal:
                return LineLogHandler(label: label, format: .journal) { line in FileHandle.standardError.write(Data(line.utf8)) }
            case .files:
                return MultiplexLogHandler([
                    StreamLogHandler.standardError(label: label),
                    LineLogHandler(label: label, format: .file) { [self] line in self.file.withLock { $0?.append(line) } },
                ])
            }
        }
        logger.logLevel = level
        return logger
    }

    /// Starts writing the files in `directory` (`DATA/logs`); lines logged before went to
    /// standard error only. Under the journal, nothing to open.
    public func open(directory: String, limits: RotatingLogFile.Limits) throws(CommandError) {
        guard destination == .files else { return }
        let opened = try RotatingLogFile(directory: directory, limits: limits)
        file.withLock { $0 = opened }
    }

    /// The last `count` lines of the log, oldest first; nil when the journal holds it (or the
    /// files are not open), with what to run instead.
    public func recentLines(_ count: Int) -> Result<[String], CommandError> {
        switch destination {
        case .journal:
            return .failure(CommandError("this agent logs to the systemd journal: read it with journalctl _PID=\(getpid()) (or journalctl -u <its unit>)"))
        case .files:
            guard let file = file.withLock({ $0 }) else { return .failure(CommandError("this agent keeps no log files")) }
            return .success(file.recentLines(count))
        }
    }
}
