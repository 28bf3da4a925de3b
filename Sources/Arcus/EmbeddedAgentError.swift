import ArcusAgent

/// Why the embedded agent refused or failed a request, in words a person can act on: the same
/// message `arcus agent` and its HTTP API give for the same mistake.
public struct EmbeddedAgentError: Error, CustomStringConvertible, Sendable {
    public let message: String

    public init(_ message: String) { self.message = message }

    init(_ error: CommandError) { message = error.message }

    public var description: String { message }
}
