import Logging
import Synchronization

/// The agent's log level, shared by every copy of its logger, so that `ALTER SYSTEM SET
/// log_level` changes what each part logs at once (a `Logger` is a value: each part holds its
/// own copy, whose handler asks this for the level).
final class AdjustableLogLevel: Sendable {
    private let current: Mutex<Logger.Level>

    init(_ level: Logger.Level) { current = Mutex(level) }

    var level: Logger.Level {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }

    /// `logger` with its lines going where they went, at this level.
    func adjusting(_ logger: Logger) -> Logger {
        var adjusted = logger
        adjusted.handler = Handler(wrapped: logger.handler, level: self)
        return adjusted
    }

    private struct Handler: LogHandler {
        var wrapped: any LogHandler
        let level: AdjustableLogLevel

        var logLevel: Logger.Level {
            get { level.level }
            set { level.level = newValue }
        }

        var metadata: Logger.Metadata {
            get { wrapped.metadata }
            set { wrapped.metadata = newValue }
        }

        var metadataProvider: Logger.MetadataProvider? {
            get { wrapped.metadataProvider }
            set { wrapped.metadataProvider = newValue }
        }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { wrapped[metadataKey: key] }
            set { wrapped[metadataKey: key] = newValue }
        }

        func log(event: LogEvent) { wrapped.log(event: event) }
    }
}
