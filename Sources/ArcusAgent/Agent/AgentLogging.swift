import Logging

/// The agent's logger: swift-log lines on standard error, which keeps standard output for the
/// ready line and the commands' JSON.
public enum AgentLogging {
    public static func standardError(level: String) throws(CommandError) -> Logger {
        guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
            let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            throw CommandError("--log-level \(level.debugDescription) is not one of \(levels)", exitStatus: 2)
        }
        return standardError(level: parsed)
    }

    public static func standardError(level: Logger.Level) -> Logger {
        var logger = Logger(label: "arcus.agent") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = level
        return logger
    }
}
