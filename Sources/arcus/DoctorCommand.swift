import ArcusAgent
import ArgumentParser

struct DoctorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check what the agent needs here: its data directory, the mesh credential, each transport's daemon and kernel support.",
        discussion: """
            Takes the agent's options and says, for each part, whether it works and what to do if not. \
            It changes nothing and opens no store, so it is safe beside a running agent. Exit status 1 \
            when something the configuration asks for cannot work. Transports not configured are \
            checked too and marked `unused` when they would fail.
              arcus doctor --data /var/lib/arcus --config /etc/arcus/agent.json
            """
    )

    @Option(help: "The agent's data directory.")
    var data: String = "./data"

    @Option(help: "The agent's JSON configuration file.")
    var config: String?

    @Option(help: "The transports to check as configured, comma-separated (default: the configuration's).")
    var transports: String?

    @Option(help: "The LAN listen address to check, HOST:PORT.")
    var listen: String?

    @Option(help: "Static peers, HOST:PORT (repeatable).")
    var peer: [String] = []

    @Option(help: "The NATS relay to check, nats://HOST:PORT (repeatable).")
    var cloud: [String] = []

    @Flag(help: "Print one JSON object instead of the table.")
    var json = false

    func run() throws {
        do {
            let configuration = try AgentConfiguration.resolve(
                dataDirectory: data, configFile: config, name: nil, http: nil, listen: listen,
                transports: transports, peers: peer, subscriptions: [], cloud: cloud
            )
            let checks = Doctor(configuration: configuration).run()
            print(json ? DoctorReport.json(checks) : DoctorReport.table(checks))
            if !Doctor.passes(checks) { throw ExitCode(1) }
        } catch let error as CommandError {
            Terminal.writeError("error: " + error.message + "\n")
            throw ExitCode(error.exitStatus)
        }
    }
}
