import ArcusAgent
import ArgumentParser

struct Exec: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run one DQL statement and print {\"items\": […], \"mutatedDocumentIDs\": […]} (and \"commit_id\" after a write).",
        discussion: """
            Examples:
              arcus exec --data ./data "INSERT INTO cars DOCUMENTS ({'_id': 'a', 'color': 'blue'})"
              arcus exec --data ./data "SELECT * FROM cars WHERE color = :c" --args '{"c": "blue"}'
              arcus exec --agent http://127.0.0.1:4747 "SELECT * FROM cars"
              arcus exec --agent http://127.0.0.1:4747 --wait-synced truck-7,truck-9 --timeout 20 \\
                "UPDATE cars SET color = 'red' WHERE _id = 'a'"
            A write prints its commit id: the position of its last change in the store's change log. \\
            With --wait-synced the agent answers only once each peer named (an id, as `arcus peers` \\
            shows, or the name it announces) has acknowledged what the write changed; after \\
            --timeout seconds (default 30) it says which peers do not hold it and why, and the exit \\
            status is 1 (the write is committed here either way).
            With --data the statement runs on the store in that directory (which no agent may hold); \\
            with --agent it runs in that agent. An error in the statement is printed on standard \\
            error with its line and column, and the exit status is 2.
            """
    )

    @Option(help: "The data directory of the store (created if needed).")
    var data: String?

    @Option(help: "The URL of a running agent (its ready line gives it), instead of --data.")
    var agent: String?

    @OptionGroup var token: AgentTokenOption

    @Argument(help: "The DQL statement.")
    var statement: String

    @Option(help: "Arguments for :name placeholders, as a JSON object.")
    var args: String?

    @Option(help: "With --data: what the write survives once this prints, as for `arcus agent --durability`: full (default; a power cut too) or normal (the process being killed).")
    var durability: String?

    @Option(name: .customLong("wait-synced"), help: "With --agent: answer only once these peers (ids or names, comma-separated) hold what the statement wrote.")
    var waitSynced: String?

    @Option(help: "With --wait-synced: give up after this many seconds (default 30).")
    var timeout: Double?

    /// The peers --wait-synced names.
    var peersToWaitFor: [String] {
        (waitSynced ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    func validate() throws {
        if (data == nil) == (agent == nil) {
            throw ValidationError("give either --data DIR (a store on disk) or --agent URL (a running agent)")
        }
        if token.tokenFile != nil && agent == nil { throw ValidationError("--token-file goes with --agent") }
        if durability != nil && data == nil { throw ValidationError("--durability goes with --data: an agent writes with its own") }
        if waitSynced != nil {
            if agent == nil { throw ValidationError("--wait-synced goes with --agent: a store opened with --data syncs with no one") }
            if peersToWaitFor.isEmpty { throw ValidationError("--wait-synced needs one or more peer ids or names, comma-separated (arcus peers lists them)") }
        }
        if let timeout {
            if waitSynced == nil { throw ValidationError("--timeout goes with --wait-synced") }
            if !(timeout > 0 && timeout <= 3600) { throw ValidationError("--timeout must be a number of seconds above 0 and at most 3600") }
        }
    }

    func run() async throws {
        do {
            if let agent {
                let client = try AgentClient(url: agent, tokenFile: token.tokenFile)
                let arguments = try CommandArguments.parse(args)
                if waitSynced != nil {
                    print(try await client.execute(statement, arguments: arguments, waitSynced: peersToWaitFor, timeout: timeout ?? 30))
                } else {
                    print(try await client.execute(statement, arguments: arguments))
                }
            } else if let data {
                let durability = try self.durability.map { text throws(CommandError) in try Durability.parse(text) } ?? .full
                print(try LocalExecution.run(data: data, statement: statement, arguments: args, durability: durability))
            }
        } catch let error as CommandError {
            Terminal.writeError(error.message + "\n")
            throw ExitCode(error.exitStatus)
        }
    }
}
