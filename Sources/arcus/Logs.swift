import ArcusAgent
import ArgumentParser

struct Logs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the last lines of a running agent's log.",
        discussion: """
              arcus logs --agent http://127.0.0.1:4747 [--lines 1000]

            The agent keeps its log in DATA/logs: arcus.log, and when it reaches log_file_bytes (default 1 MiB) it is \
            compressed into arcus.log.1.zst, the older ones moving up to log_files (default 5). Under systemd the \
            journal keeps the log instead: journalctl -u <the unit>.
            """
    )

    @Option(help: "The agent's URL, as its ready line gives it.")
    var agent: String = "http://127.0.0.1:4747"

    @OptionGroup var token: AgentTokenOption

    @Option(help: "How many lines, the last ones (1 to 100000).")
    var lines = 1000

    func validate() throws {
        guard (1...100_000).contains(lines) else { throw ValidationError("--lines must be from 1 to 100000") }
    }

    func run() async throws {
        do throws(CommandError) {
            let client = try AgentClient(url: agent, tokenFile: token.tokenFile)
            // Each line ends with a newline; print adds the last one back if the client trimmed it.
            let text = try await client.logs(lines: lines)
            print(text.hasSuffix("\n") ? String(text.dropLast()) : text)
        } catch {
            Terminal.writeError(error.message + "\n")
            throw ExitCode(error.exitStatus)
        }
    }
}
