import ArgumentParser

@main
struct Arcus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "arcus",
        abstract: "Arcus: an edge sync agent. Every device keeps a CRDT document store and syncs it with whoever is near.",
        discussion: """
            Try `arcus exec --data ./data "INSERT INTO cars DOCUMENTS ({'make': 'toyota'})"`, then \
            `arcus exec --data ./data "SELECT * FROM cars"`. `arcus demo --peers 16 --topology random --drops` \
            runs a whole mesh on this machine and shows it converge. `arcus bench trace FILE` replays a \
            workload trace through sync sessions; `arcus bench store` measures the store against plain \
            SQLite. `arcus agent --data ./data` runs the agent and its local HTTP API. Run `arcus help <command>` for any command's options.
            """,
        subcommands: [AgentCommand.self, Exec.self, Observe.self, Subscribe.self, Peers.self, Status.self, Logs.self, DoctorCommand.self, Demo.self, Bench.self, Mesh.self, FieldTest.self, Attachment.self]
    )
}
