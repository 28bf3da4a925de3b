import ArgumentParser

@main
struct Arcus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "arcus",
        abstract: "Arcus: an edge sync agent. Every device keeps a CRDT document store and syncs it with whoever is near.",
        discussion: """
            Start with `arcus bench trace FILE` to replay a workload trace and compare Arcus with the \
            anchor engines. Run `arcus help <command>` for any command's options.
            """,
        subcommands: [Bench.self]
    )
}
