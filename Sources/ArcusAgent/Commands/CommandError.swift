/// An error a command reports to its user, with the exit status it should end with.
public struct CommandError: Error, CustomStringConvertible {
    public var message: String
    /// 2 for a bad statement or bad input, 1 for anything else.
    public var exitStatus: Int32

    public init(_ message: String, exitStatus: Int32 = 1) {
        self.message = message
        self.exitStatus = exitStatus
    }

    public var description: String { message }
}
