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
              arcus exec --data ./data "SELECT make, COUNT(*) AS n FROM cars GROUP BY make"
              arcus exec --data ./data "SELECT _id, conflicts(color) FROM cars WHERE length(conflicts(color)) > 0"
              arcus exec --agent http://127.0.0.1:4747 --wait-synced truck-7,truck-9 --timeout 20 \\
                "UPDATE cars SET color = 'red' WHERE _id = 'a'"
            Statements:
              SELECT [DISTINCT] * | expr [AS name], … FROM c [WHERE …]
                [GROUP BY expr, …] [HAVING …] [ORDER BY expr [ASC|DESC], …]
                [LIMIT n] [OFFSET n]
              INSERT INTO c [INITIAL] DOCUMENTS (…), …
                [ON ID CONFLICT FAIL | DO NOTHING | DO UPDATE | DO UPDATE_LOCAL_DIFF]
              UPDATE c SET path = expr, … [UNSET path, …] [WHERE …]
              UPDATE COLLECTION c (f PN_COUNTER) APPLY f PN_INCREMENT BY n [WHERE …]
              DELETE FROM c [WHERE …]
              EVICT FROM c [WHERE …] (local only, never synced)
              CREATE INDEX [IF NOT EXISTS] name ON c (path, …)
              DROP INDEX [IF EXISTS] name [ON c]
              EXPLAIN statement (its plan; runs nothing, writes nothing)
              PROFILE SELECT … (runs the SELECT; its plan with what it read and took)
              SHOW [ALL | name] (runtime settings: name, value, default, source, applies)
              ALTER SYSTEM SET name = value (saved; live where it can be)
              ALTER SYSTEM RESET name | ALL
            Conditions: = != < <= > >=, [NOT] IN [a, b] or [NOT] IN (a, b) or IN :list, [NOT] LIKE, \
            [NOT] BETWEEN … AND …, IS [NOT] NULL, IS [NOT] MISSING, AND, OR, NOT.
            Functions: length, lower, upper, contains, starts_with, ends_with, coalesce, \
            array_contains, type, conflicts. conflicts(path) gives the values of that field that \
            lost its latest last-writer-wins merge here to a write that had not seen them, as \
            [{"value": …, "site": "<writer's site>", "written_at": "<ISO 8601>"}] (empty when \
            none; at most conflicts_per_field, 0 by default: the view is off until it is set); a \
            later write to the field clears it (Docs/Conflicts.md). Aggregates (in the projection, HAVING and ORDER BY): COUNT(*), \
            COUNT(x) (values neither missing nor null), SUM(x) and AVG(x) (numbers only), MIN(x), \
            MAX(x). Without GROUP BY, aggregates make one row (COUNT 0 and the others null when \
            nothing matches); documents missing a GROUP BY field form one group with those where it \
            is null, shown as null. Rows of groups have no _id; unnamed aggregates are named like \
            count(*). Not supported yet: COUNT(DISTINCT x), subqueries, joins.
            EXPLAIN prints the plan as the single item: the access path (an index with the values \
            or bounds it looks up, the primary key for _id, a scan, a count SQL answers alone, or a \
            system: collection), the filter left to check on each document, grouping, sort, \
            offset, limit, and estimated_rows (the documents the access path yields, counted \
            through it). PROFILE adds actual_rows (documents read, matched, rows returned) and \
            elapsed_ms, and prints no rows of the SELECT itself; PROFILE of a write is refused.
            SHOW and ALTER SYSTEM: the settings are log_level, durability and transports (live: \
            ALTER SYSTEM SET transports = 'loopback' stops LAN in a running agent), pending_handshakes \
            and ble_links (at restart), named as in the configuration file. A change is saved in the \
            data directory and wins over the configuration across restarts; RESET goes back to it. \
            With --data they change what the agent will start with.
            FROM system:collections, system:indexes, system:conflicts (one row per kept loser: \
            collection, document_id, path, value, site, written_at), and with --agent system:data_sync_info, \
            system:system_info and system:peers: read-only collections of the store's and the \
            agent's state, read with SELECT.
            A write prints its commit id: the position of its last change in the store's change \
            log. With --wait-synced the agent answers only once each peer named (an id, as `arcus \
            peers` shows, or the name it announces) has acknowledged what the write changed; after \
            --timeout seconds (default 30) it says which peers do not hold it and why, and the exit \
            status is 1 (the write is committed here either way).
            With --data the statement runs on the store in that directory (which no agent may hold); \
            with --agent it runs in that agent. An error in the statement is printed on standard \
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
