import ArcusCRDT

/// `--args JSON` of the commands that take DQL arguments.
public enum CommandArguments {
    /// The JSON object, or `[:]` when absent; a `CommandError` (exit status 2) otherwise.
    public static func parse(_ json: String?) throws(CommandError) -> [String: Value] {
        do {
            return try LocalExecution.parseArguments(json)
        } catch let error as CommandError {
            throw error
        } catch {
            throw CommandError("--args: \(error)", exitStatus: 2)
        }
    }
}
