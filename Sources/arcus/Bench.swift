import ArcusAgent
import ArcusBench
import ArcusBluetooth
import ArcusStore
import ArgumentParser
import Foundation

struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure Arcus and print figures, one JSON line per run.",
        subcommands: [
            BenchTrace.self, BenchStore.self, BenchLAN.self, BenchBLE.self, BenchBLEAdapters.self, BenchCloud.self, BenchWriteLoad.self, BenchAmplification.self,
        ]
    )
}

struct BenchTrace: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace",
        abstract: "Replay a workload trace and print the figures of shared/bench/TRACE.md.",
        discussion: """
            Generate a trace with `python3 ../shared/bench/gen_trace.py --profile fleet --seed 1 > fleet.jsonl`, \
            replay it with `arcus bench trace fleet.jsonl`, and compare with the anchors \
            (`python3 ../shared/bench/anchors.py fleet.jsonl`) in the same run. \
            Tools/bench-vs-anchors.sh does all three and prints the side-by-side table.
            """
    )

    @Argument(help: "A trace file in the JSON Lines format of shared/bench/TRACE.md.")
    var file: String

    @Option(help: "Where replicas keep their documents: memory, or sqlite (a durable store each, in --scratch).")
    var store: TraceBench.Storage = .memory

    @Option(help: """
        How each sync happens: protocol (a sync session over a loopback link between stores, as devices do) \
        or frames (a summary and a delta batch between in-memory replicas: the codec alone, the replay-speed figure).
        """)
    var exchange: TraceBench.Exchange = .protocol

    @Option(help: "Where sqlite replicas keep their data directories (removed afterwards).")
    var scratch: String?

    @Flag(help: """
        Secure every sync session's link as the mesh does (Noise handshake with a shared secret, an identity \
        per replica, sealed frames). wire_bytes then counts every byte on the link, handshake included; \
        handshake_bytes and sync_frame_bytes (what a plain run counts) are printed too.
        """)
    var secure = false

    @Option(help: """
        With --secure, how replicas join the mesh: secret (a shared secret) or certificates (one authority, every replica a \
        relay; receivers check each writer against its certificate, which relays pass on ahead of its writes).
        """)
    var credential: TraceBench.Credential = .secret

    @Option(help: "With --exchange protocol, the conflicts each replica keeps per field, as the agent's conflicts_per_field (0 turns the conflict view off).")
    var conflictsPerField = Store.defaultConflictsPerField

    @Flag(help: "Print no progress on standard error.")
    var quiet = false

    func validate() throws {
        if secure && exchange != .protocol { throw ValidationError("--secure needs --exchange protocol") }
        if !(0...64).contains(conflictsPerField) { throw ValidationError("--conflicts-per-field takes 0 to 64, as conflicts_per_field does") }
    }

    func run() async throws {
        let trace = try Trace(contentsOf: file)
        let progress: ((Double) -> Void)? = quiet ? nil : { share in
            Terminal.progress("replaying \(trace.operations.count) operations", share: share)
        }
        let scratch = URL(fileURLWithPath: self.scratch ?? FileManager.default.temporaryDirectory.path)
        let figures = try await TraceBench(
            trace: trace, storage: store, exchange: exchange, scratch: scratch, secure: secure, credential: credential,
            conflictsPerField: conflictsPerField
        ).run(progress: progress)
        if !quiet { Terminal.clearProgress() }
        print(figures.jsonLine)
    }
}

struct BenchStore: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Measure the store against a plain SQLite table of JSON text, in the same run.",
        discussion: """
            Writes N documents shaped like the fleet trace's in transactions of 100, N/10 more one \
            transaction each, reads documents by _id, runs an equality SELECT without and with an index, \
            and times an observer — the same work on both engines, taking turns. The one-transaction \
            upserts are also timed with durability full (PRAGMA synchronous = FULL: an fsync of the WAL per \
            commit, what `arcus agent` does by default) beside normal, on both engines, in a second pair of \
            databases: single_write_full_us against single_write_normal_us, sqlite_full_us against \
            sqlite_normal_us. Put --scratch on the disk the store will live on (a tmpfs makes fsync free). \
            Build with -c release.
            """
    )

    @Option(help: "How many documents to write in transactions of 100.")
    var docs = 100_000

    @Option(help: "Where to put the two scratch databases (removed afterwards).")
    var scratch: String?

    @Flag(help: "Print no progress on standard error.")
    var quiet = false

    func run() throws {
        let scratch = URL(fileURLWithPath: self.scratch ?? FileManager.default.temporaryDirectory.path)
            .appendingPathComponent("arcus-bench-store-\(ProcessInfo.processInfo.processIdentifier)")
        let progress: ((String, Double) -> Void)? = quiet ? nil : { phase, share in Terminal.progress(phase, share: share) }
        let figures = try StoreBench(documents: docs, scratch: scratch).run(progress: progress)
        if !quiet { Terminal.clearProgress() }
        print(figures.jsonLine)
    }
}

struct BenchAmplification: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "amplification",
        abstract: "Send hostile frames to a sync session and print the peak memory each makes it take.",
        discussion: """
            Each frame of issue 17's finding 5 (a step-key batch, a zstd bomb, a missing flood, …) goes, after a \
            hello and a subscription, to a fresh store's sync session over a loopback link in the mesh's \
            fragments, in a child process of its own. One JSON line per frame: its wire size, the growth of \
            the child's peak resident size (VmHWM) over its size just before the frame, and why the session \
            ended. A child that grows past --kill-above-mib is killed and reported so.
            """
    )

    @Option(help: "Only this frame, measured in this process: \(HostileFrame.allCases.map(\.rawValue).joined(separator: ", ")).")
    var frame: HostileFrame?

    @Option(name: .customLong("kill-above-mib"), help: "Kill a child whose resident size passes this many MiB.")
    var killAboveMiB = 1024

    func run() async throws {
        if let frame {
            print(try await AmplificationBench.measure(frame).jsonLine)
            return
        }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        try AmplificationBench.runInChildren(executable: executable, frames: HostileFrame.allCases, killAboveMiB: killAboveMiB) { line in
            // A line per child as it ends: a run takes a while.
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
    }
}

extension HostileFrame: ExpressibleByArgument {}

struct BenchWriteLoad: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write-load",
        abstract: "Write documents to collection `load`, one transaction each, printing each _id after its commit.",
        discussion: "Used by the crash-safety test: whatever this printed must still be in the store after SIGKILL."
    )

    @Option(help: "The data directory of the store.")
    var data: String

    @Option(help: "How many documents to write (default: until stopped).")
    var count: Int?

    @Option(help: "The first _id.")
    var start = 0

    func run() throws {
        try WriteLoad.run(data: data, count: count, start: start)
    }
}

extension TraceBench.Storage: ExpressibleByArgument {}
extension TraceBench.Exchange: ExpressibleByArgument {}
extension TraceBench.Credential: ExpressibleByArgument {}

struct BenchLAN: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lan",
        abstract: "Two agent processes over loopback TCP: a fresh peer's catch-up, each one's peak memory, and the latency of one update.",
        discussion: """
            Writes --docs fleet-shaped documents into a source's data directory, then runs two `arcus agent` \
            processes (this executable), each with its own data directory, linked by their LAN transports on \
            127.0.0.1 (--no-mdns: nothing published, nothing sent beyond 127.0.0.0/8) with a fresh shared secret \
            (sealed, as agents run). Prints the time and bytes for the fresh follower to catch up (timed from its \
            start; bytes against the documents' JSON text), each agent's peak resident size (VmHWM), then the \
            latency of --updates single updates, from the source's API to the follower's observe stream: p50, \
            p99 and the slowest; last, whether both stores hold the same documents. \
            --confine-follower runs the follower in a cgroup (v2, or v1's cpu and memory controllers; needs \
            root) limited to --follower-cpu of one core and --follower-memory-mib, and adds the cgroup's peak \
            charge (memory and page cache) and its OOM kills; the cgroup is removed afterwards. Build with -c release.
            """
    )

    @Option(help: "How many documents the follower catches up.")
    var docs = 100_000

    @Flag(help: "Run the follower in a cgroup limited to --follower-cpu of one core and --follower-memory-mib, as a small board would.")
    var confineFollower = false

    @Option(help: "With --confine-follower: the share of one core the follower may use.")
    var followerCpu = 0.25

    @Option(name: .customLong("follower-memory-mib"), help: "With --confine-follower: the follower's memory limit, in MiB.")
    var followerMemoryMiB = 256

    @OptionGroup var common: TwoAgentBenchOptions

    func validate() throws {
        guard docs >= 10 else { throw ValidationError("--docs must be at least 10") }
        guard followerCpu >= 0.01 && followerCpu <= 64 else { throw ValidationError("--follower-cpu must be between 0.01 and 64 cores") }
        guard followerMemoryMiB >= 16 else { throw ValidationError("--follower-memory-mib must be at least 16") }
    }

    func run() async throws {
        var options = LANBench.Options()
        options.documents = docs
        options.updates = common.updates
        if let scratch = common.scratch { options.scratch = URL(fileURLWithPath: scratch) }
        options.confineFollower = confineFollower
        options.confinementQuota = Int((followerCpu * Double(options.confinementPeriod)).rounded())
        options.confinementMemoryBytes = followerMemoryMiB << 20
        let figures = try await LANBench(options: options).run(progress: common.progress)
        common.finish(figures.jsonLine)
        // The figures say how far it got; the exit status says that it did not finish.
        if !figures.completed || !figures.converged { throw ExitCode(1) }
    }
}

struct BenchBLE: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ble-emulated",
        abstract: "Two agents over one emulated Bluetooth LE link: bulk goodput against the link rate, and one update's latency.",
        discussion: """
            Runs two agents in this process linked by the emulated radio (AF_UNIX SOCK_SEQPACKET, the \
            same channel code as L2CAP, paced as an LE PHY with L2CAP and link-layer overhead and a \
            connection interval of latency), sealed as agents run. A fresh follower catches up --docs \
            fleet-shaped documents: goodput_ratio is the sync bytes per second from the link coming up \
            until the last document, over the rate the link carries in full SDUs (what l2test would \
            measure). Then --updates single updates, against the link's latency. Build with -c release.
            """
    )

    @Option(help: "How many documents the bulk sync carries.")
    var docs = 30_000

    @Option(help: "How many single updates to time.")
    var updates = 100

    @Option(help: "The PHY's rate in bits per second (1000000 for LE 1M, 2000000 for LE 2M).")
    var rate = 1_000_000.0

    @Option(help: "The connection interval in milliseconds (the link's one-way latency).")
    var interval = 7.5

    @Option(help: "The SDU MTU in bytes.")
    var mtu = 247

    @Flag(help: "Print no progress on standard error.")
    var quiet = false

    func validate() throws {
        guard docs >= 10 else { throw ValidationError("--docs must be at least 10") }
        guard rate >= 10_000 else { throw ValidationError("--rate must be at least 10000 bit/s") }
        guard interval > 0 && interval <= 4000 else { throw ValidationError("--interval must be between 0 and 4000 ms") }
        guard (23...65535).contains(mtu) else { throw ValidationError("--mtu must be between 23 and 65535") }
    }

    func run() async throws {
        var options = BLEBench.Options()
        options.documents = docs
        options.updates = updates
        options.mtu = mtu
        options.bitsPerSecond = rate
        options.connectionInterval = .microseconds(Int64(interval * 1000))
        let progress: ((String, Double) -> Void)? = quiet ? nil : { phase, share in Terminal.progress(phase, share: share) }
        let figures = try await BLEBench(options: options).run(progress: progress)
        if !quiet { Terminal.clearProgress() }
        print(figures.jsonLine)
    }
}

struct BenchBLEAdapters: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ble",
        abstract: "Two agents on two of this machine's Bluetooth controllers: bulk goodput (beside l2test's on the same pair) and one update's latency.",
        discussion: """
            As `arcus bench ble-emulated`, but each agent on a real controller (--adapter SOURCE,FOLLOWER: \
            hciN or addresses, as --ble-adapter takes them), discovering the other through the kernel and \
            linking over an L2CAP LE credit-based channel. Give --l2test-bytes-per-s, what BlueZ's l2test \
            moved between the same two controllers, and goodput_ratio is Arcus's sync bytes per second over \
            it. Tools/test-bluetooth.sh runs both on virtual controllers in a VM. Build with -c release.
            """
    )

    @Option(help: "The source's and the follower's controllers, SOURCE,FOLLOWER (hciN or AA:BB:CC:DD:EE:FF).")
    var adapter: String

    @Option(help: "How many documents the bulk sync carries.")
    var docs = 10_000

    @Option(help: "How many single updates to time.")
    var updates = 20

    @Option(help: "What l2test moved between the same two controllers, in bytes per second (the link's reference rate).")
    var l2testBytesPerS: Double?

    @Flag(help: "Print no progress on standard error.")
    var quiet = false

    func run() async throws {
        let names = adapter.split(separator: ",").map(String.init)
        guard names.count == 2, let source = BluetoothAdapter(names[0]), let follower = BluetoothAdapter(names[1]), source != follower else {
            throw ValidationError("--adapter takes two different controllers, SOURCE,FOLLOWER, each hciN or AA:BB:CC:DD:EE:FF; got \(adapter)")
        }
        var options = BLEBench.Options()
        options.documents = docs
        options.updates = updates
        options.adapters = (source, follower)
        options.referenceBytesPerSecond = l2testBytesPerS
        let progress: ((String, Double) -> Void)? = quiet ? nil : { phase, share in Terminal.progress(phase, share: share) }
        let figures = try await BLEBench(options: options).run(progress: progress)
        if !quiet { Terminal.clearProgress() }
        print(figures.jsonLine)
    }
}

struct BenchCloud: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cloud",
        abstract: "Two agents through a NATS relay: a fresh peer's catch-up, one update's latency, and the bytes on the relay.",
        discussion: """
            Runs two agents in this process, each with only the cloud transport to the relay at --cloud \
            and a fresh shared secret (a mesh of its own on the relay, sealed as agents run). A fresh \
            follower catches up --documents fleet-shaped documents through the relay, then --updates single \
            updates are timed from the write at the source to the follower's observer (p50, p99, the \
            slowest). A connection of the bench's own counts what is published on the mesh's subjects: \
            bytes and messages per update, and per second over 2 s of no writes. Needs a relay: \
            `nats-server -a 127.0.0.1 -p 4222 -js` (Tools/bench.sh starts one). Build with -c release.
            """
    )

    @Option(help: "The NATS relay, nats://HOST:PORT (required).")
    var cloud: String?

    @Option(name: [.customLong("documents"), .customLong("docs")], help: "How many documents the follower catches up through the relay.")
    var docs = 10_000

    @OptionGroup var common: TwoAgentBenchOptions

    func validate() throws {
        guard cloud != nil else {
            throw ValidationError("--cloud is required: the relay, such as nats://127.0.0.1:4222 (start one with `nats-server -a 127.0.0.1 -p 4222 -js`)")
        }
        guard docs >= 10 else { throw ValidationError("--documents must be at least 10") }
    }

    func run() async throws {
        var options = CloudBench.Options(relayURL: cloud ?? "")
        options.documents = docs
        options.updates = common.updates
        if let scratch = common.scratch { options.scratch = URL(fileURLWithPath: scratch) }
        let figures = try await CloudBench(options: options).run(progress: common.progress)
        common.finish(figures.jsonLine)
    }
}

/// The options `bench lan` and `bench cloud` share: two agents, a catch-up, then single updates.
struct TwoAgentBenchOptions: ParsableArguments {
    @Option(help: "How many single updates to time once it has.")
    var updates = 500

    @Option(help: "Where to put the two agents' data directories (removed afterwards).")
    var scratch: String?

    @Flag(help: "Print no progress on standard error.")
    var quiet = false

    func validate() throws {
        guard updates >= 1 else { throw ValidationError("--updates must be at least 1") }
    }

    /// Progress on standard error, unless --quiet.
    var progress: ((String, Double) -> Void)? {
        quiet ? nil : { phase, share in Terminal.progress(phase, share: share) }
    }

    /// Clears the progress line and prints the bench's figures.
    func finish(_ jsonLine: String) {
        if !quiet { Terminal.clearProgress() }
        print(jsonLine)
    }
}
