import Foundation
import Logging

/// A swift-log handler that hands each line to `sink`: the journal stream (`<priority>` first,
/// no timestamp: the journal stamps it) or the log files (a timestamp first, as on standard error).
public struct LineLogHandler: LogHandler {
    public enum Format: Sendable {
        case journal
        case file
    }

    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    let label: String
    let format: Format
    let sink: @Sendable (String) -> Void

    public init(label: String, format: Format, sink: @escaping @Sendable (String) -> Void) {
        self.label = label
        self.format = format
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let fields = merged.isEmpty ? "" : " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        // One record is one line: a message with a newline would otherwise split into two.
        let message = "\(event.message)".replacingOccurrences(of: "\n", with: "\\n")
        switch format {
        case .journal:
            sink("<\(JournalStream.priority(event.level))>\(label): [\(event.source)] \(message)\(fields)\n")
        case .file:
            let time = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
            sink("\(time) \(event.level) \(label): [\(event.source)] \(message)\(fields)\n")
        }
    }
}
