import ArcusAgent
import ArgumentParser

#if canImport(Glibc)
import Glibc
#endif

struct Exec: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run one DQL statement and print {\"items\": […], \"mutatedDocumentIDs\": […]}.",
        discussion: """
            Examples:
              arcus exec --data ./data "INSERT INTO cars DOCUMENTS ({'_id': 'a', 'color': 'blue'})"
              arcus exec --data ./data "SELECT * FROM cars WHERE color = :c" --args '{"c": "blue"}'
            An error in the statement is printed on standard error with its line and column, and the \\
            exit status is 2.
            """
    )

    @Option(help: "The data directory of the store (created if needed).")
    var data: String

    @Argument(help: "The DQL statement.")
    var statement: String

    @Option(help: "Arguments for :name placeholders, as a JSON object.")
    var args: String?

    func run() throws {
        do {
            print(try LocalExecution.run(data: data, statement: statement, arguments: args))
        } catch let error as CommandError {
            Terminal.writeError(error.message + "\n")
            throw ExitCode(error.exitStatus)
        }
    }
}
