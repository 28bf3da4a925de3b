import ArcusAgent
import ArgumentParser
import Foundation

struct Observe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a SELECT's result, then again after every change, as JSON lines, until interrupted.",
        discussion: """
            Each line is {"items": […], "diff": {"insertions": […], "deletions": […], "updates": […], "moves": […]}}.
              arcus observe --agent http://127.0.0.1:4747 "SELECT * FROM cars WHERE color = 'blue'"
            """
    )

    @Option(help: "The agent's URL, as its ready line gives it.")
    var agent: String

    @OptionGroup var token: AgentTokenOption

    @Argument(help: "The SELECT statement.")
    var query: String

    @Option(help: "Arguments for :name placeholders, as a JSON object.")
    var args: String?

    func run() async throws {
        do {
            let client = try AgentClient(url: agent, tokenFile: token.tokenFile)
            try await client.observe(query, arguments: try CommandArguments.parse(args)) { line in
                FileHandle.standardOutput.write(Data((line + "\n").utf8))
            }
        } catch {
            Terminal.writeError(error.message + "\n")
            throw ExitCode(error.exitStatus)
        }
    }
}
