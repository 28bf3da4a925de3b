import ArcusAgent
import ArgumentParser

struct Peers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a running agent's presence graph: the peers it knows and the links between them.",
        discussion: "  arcus peers --agent http://127.0.0.1:4747 [--json]"
    )

    @Option(help: "The agent's URL, as its ready line gives it.")
    var agent: String

    @OptionGroup var token: AgentTokenOption

    @Flag(help: "Print the graph as JSON (as GET /v1/peers answers) instead of a table.")
    var json = false

    func run() async throws {
        do {
            let document = try await AgentClient(url: agent, tokenFile: token.tokenFile).peers()
            print(json ? document : try PeersTable(json: document).text)
        } catch {
            Terminal.writeError(error.message + "\n")
            throw ExitCode(error.exitStatus)
        }
    }
}
