import ArcusAgent
import ArgumentParser

struct Subscribe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Register a sync subscription in a running agent; it persists in the agent's store.",
        discussion: """
            Prints {"id": …, "query": …}; `DELETE /v1/subscriptions/ID` cancels it.
              arcus subscribe --agent http://127.0.0.1:4747 "SELECT * FROM cars"
            """
    )

    @Option(help: "The agent's URL, as its ready line gives it.")
    var agent: String

    @Argument(help: "The SELECT whose documents this peer asks its neighbours for.")
    var query: String

    @Option(help: "Arguments for :name placeholders, as a JSON object.")
    var args: String?

    func run() async throws {
        do {
            print(try await AgentClient(url: agent).subscribe(query, arguments: try CommandArguments.parse(args)))
        } catch {
            Terminal.writeError(error.message + "\n")
            throw ExitCode(error.exitStatus)
        }
    }
}
