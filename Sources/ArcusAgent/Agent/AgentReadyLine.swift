import ArcusCRDT
import Foundation

/// The ready line of an `arcus agent` started as a child process (`Agent.readyLine`), read back
/// from the file its standard output goes to: what whoever started it (the benches, the tests)
/// waits for before using it.
public struct AgentReadyLine: Sendable {
    /// Every field of the line.
    public let fields: [String: Value]
    /// The API's URL.
    public let http: String

    public var peer: String? { fields["peer"]?.stringValue }
    /// Where the LAN transport listens, its port bound.
    public var lan: String? { fields["lan"]?.stringValue }
    /// The file that holds the API's token (an agent from before the API had one names none).
    public var tokenFile: String? { fields["token_file"]?.stringValue }

    /// The first line of `output`, once it is whole and an object with the API's URL.
    public init?(output: String) {
        guard let end = output.firstIndex(of: "\n"), case .object(let fields)? = try? Value(json: String(output[..<end])),
              case .string(let http)? = fields["http"] else { return nil }
        self.fields = fields
        self.http = http
    }

    /// What a look at a starting agent found.
    public enum Startup: Sendable {
        case ready(AgentReadyLine)
        /// It exited before printing its ready line, with this status.
        case exited(Int32)
        case starting
    }

    /// Looks once at `process`, whose standard output goes to `output`.
    public static func look(at process: Process, output: URL) -> Startup {
        if let line = AgentReadyLine(output: (try? String(contentsOf: output, encoding: .utf8)) ?? "") { return .ready(line) }
        guard !process.isRunning else { return .starting }
        process.waitUntilExit()
        return .exited(process.terminationStatus)
    }
}
