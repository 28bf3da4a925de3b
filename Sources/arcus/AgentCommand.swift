import ArcusAgent
import ArgumentParser

struct AgentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent",
        abstract: "Run the agent: the store, sync, the mesh and the local HTTP API, until SIGTERM or SIGINT.",
        discussion: """
            Once the API listens, one JSON line goes to standard output:
              {"agent": "ready", "http": "http://127.0.0.1:4747", "peer": "…", …}
            Logs go to standard error. Examples:
              arcus agent --data ./data
              arcus agent --data ./data --http 127.0.0.1:0 --subscribe "SELECT * FROM cars"
              arcus agent --data ./hub --transports cloud --cloud nats://127.0.0.1:4222 --role hub
            The API is described in Docs/Agent.md; `arcus exec --agent URL`, `arcus observe`, \\
            `arcus subscribe` and `arcus peers` talk to it. Every route but the status page wants the \\
            token the agent keeps in DIR/api-token (made on the first start, mode 0600); the CLI finds it \\
            by itself for the user who runs the agent, and `arcus status --page` prints a link to the page.
            """
    )

    @Option(help: "The data directory of the store (created if needed). One agent per directory.")
    var data: String

    @Option(help: "A TOML file of agent options (or JSON, for a name ending in .json); Hardware/arcus.toml lists every key with its default. ARCUS_<KEY> environment variables override it.")
    var config: String?

    @Option(help: "The name this peer shows in the presence graph (default: the host name).")
    var name: String?

    @Option(help: "Where the LAN transport listens for peers, HOST:PORT (default 0.0.0.0:0: every interface, a port the system picks, advertised over mDNS).")
    var listen: String?

    @Option(help: "Where the HTTP API listens, HOST:PORT (default 127.0.0.1:4747; port 0 picks a free one). Loopback only, unless --http-expose.")
    var http: String?

    @Flag(help: "Let --http be an address beyond this machine: anyone who reaches it and holds the API token can then read and write the store, over plain HTTP.")
    var httpExpose = false

    @Option(help: "The transports to run, comma-separated, from lan, ble, cloud, loopback (default: loopback).")
    var transports: String?

    @Option(help: "A peer to dial directly, HOST:PORT (repeatable; for the LAN transport).")
    var peer: [String] = []

    @Flag(name: .customLong("no-mdns"), help: "For the LAN transport: find peers only through --peer, and publish nothing over mDNS (default: avahi-daemon finds peers and announces this one).")
    var noMDNS = false

    @Option(help: "A sync subscription to register and keep (repeatable), such as \"SELECT * FROM cars\".")
    var subscribe: [String] = []

    @Option(help: "For --transports ble: run the emulated radio in this shared directory (at most 63 bytes) instead of the adapter.")
    var bleEmulated: String?

    @Option(help: "For --transports ble: how many Bluetooth links to hold at once (default 4).")
    var bleLinks: Int?

    @Option(help: "For --transports ble on an adapter: the L2CAP PSM to listen on, 128-255 (default: one the kernel picks).")
    var blePsm: Int?

    @Option(help: "For --transports ble on an adapter: the controller to use, hciN or its address AA:BB:CC:DD:EE:FF (default: the lowest-numbered; `btmgmt info` lists them). Each agent on one host needs its own.")
    var bleAdapter: String?

    @Option(help: "For --transports cloud: the NATS relay, nats://HOST:PORT or tls://HOST:PORT (repeatable, for a cluster).")
    var cloud: [String] = []

    @Option(help: "peer (default), or hub: an always-on peer that subscribes to every collection and keeps it, so that devices that never meet converge through it.")
    var role: String?

    @Option(help: "How far ahead of this device's clock a peer's write may be stamped and still be merged: a number and s, m, h or d (default 7d, for boards without a real-time clock that were off for a week). Later writes are refused.")
    var clockSkewAllowance: String?

    @Option(help: "What an acknowledged write survives: full (default: the API answers once the commit is fsynced to the write-ahead log, so it survives the process being killed and a power cut) or normal (it survives the process being killed, but a power cut may lose the last writes, those since the last checkpoint; one fsync less per write). Attachment blobs are fsynced either way.")
    var durability: String?

    @Option(help: "The log level: trace, debug, info (default), notice, warning, error or critical. `ALTER SYSTEM SET log_level = debug` changes it while the agent runs.")
    var logLevel: String?

    func run() async throws {
        do {
            let configuration = try AgentConfiguration.resolve(
                dataDirectory: data, configFile: config, name: name, http: http, httpExpose: httpExpose, listen: listen,
                transports: transports, peers: peer, noMDNS: noMDNS, subscriptions: subscribe, bleEmulated: bleEmulated, bleLinks: bleLinks, blePSM: blePsm,
                bleAdapter: bleAdapter, cloud: cloud, role: role, clockSkewAllowance: clockSkewAllowance,
                durability: durability, logLevel: logLevel
            )
            try await Agent.runUntilSignalled(configuration)
        } catch let error as CommandError {
            Terminal.writeError("error: " + error.message + "\n")
            throw ExitCode(error.exitStatus)
        }
    }
}
