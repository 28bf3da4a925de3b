import ArcusAgent
import ArcusDemo
import ArgumentParser
import Foundation

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a whole mesh on this machine: N stores that write, sync and converge.",
        discussion: """
            Every peer keeps an in-memory store, subscribes to everything and writes (readings it \
            inserts, updates and deletes; shared counters; shared last-write-wins fields) while the mesh \
            moves the changes over emulated links. With --drops, links fail and come back at random. \
            When the writing stops, the demo waits for every peer to hold the same data, checks that no \
            write was lost, resurrected or duplicated, and prints one JSON line: converged, converge_s, \
            bytes_per_peer, messages, degree and more. Progress goes to standard error.

            --topology random --degree D makes a crowd: each peer hears D others on average. A peer \
            keeps sessions with at most --session-limit of the peers it hears (default 4, the \
            Bluetooth link budget; 0: every peer it hears), chosen so that the mesh stays connected, \
            shortcuts first, the rest at random by the seed. The JSON line then gives degree (heard) \
            and session_degree (kept), diameter over the kept links, bytes_per_peer_per_write, \
            deliveries (document deltas merged, over all peers) and duplicate_deliveries (those that \
            brought a peer nothing new).

            --scenario attachment instead runs a chain of --hops + 1 peers: the first stores a blob of \
            --bytes, the last fetches it through the others, and the link into the last peer drops \
            half-way and comes back; the fetch resumes from the bytes that arrived, and the JSON line \
            says whether the bytes verified.

            --scenario failover instead runs two peers joined by a fast (lan) and a slow (ble) \
            emulated link, one session over both, each sending numbered messages to the other; the \
            fast link is cut mid-run and restored later. Prints one JSON line: switch_s (from the cut \
            until messages flow again), lost, duplicated, messages, seconds, seed.

            --scenario presence instead runs --peers multiplexers in --topology, each with a presence \
            tracker, exchanging presence reports for --seconds. Prints one JSON line: full_view_s (until \
            every peer's graph names every peer with a correct route), max_hops seen by peer 0, \
            report_bytes (the largest report), presence_bytes_per_peer, routes_ok. Then it silences the \
            middle link of the topology and prints a second line, after_cut: after_cut_s, until peer \
            0's graph shows the far side unreachable (or reached another way).

            Examples: arcus demo --peers 16 --topology random --drops --seconds 60
                      arcus demo --peers 128 --topology random --degree 20 --seed 7
                      arcus demo --scenario attachment --hops 2 --link ble --bytes 100000
                      arcus demo --scenario failover --seconds 10
                      arcus demo --scenario presence --peers 8 --topology chain --seconds 12 --seed 1
            """
    )

    @Option(help: "What to run: mesh (N peers writing and syncing), attachment (a blob fetched across hops, cut off half-way), failover (one session over a fast and a slow link, the fast one cut and restored) or presence (N peers exchanging presence reports, then one link cut).")
    var scenario: Scenario = .mesh

    @Option(help: "With --scenario attachment, the hops between the blob and its fetcher.")
    var hops = 2

    @Option(help: "With --scenario attachment, the blob's size in bytes.")
    var bytes = 256 << 10

    @Option(help: "How many peers.")
    var peers = 8

    @Option(help: "Who links to whom: chain, star, mesh (a grid, degree ≤ 4) or random (about --degree links per peer).")
    var topology: Topology.Shape = .random

    @Option(help: "With --topology random, how many peers each peer hears on average.")
    var degree = Topology.defaultRandomDegree

    @Option(help: "With --scenario mesh, the most sessions a peer keeps with the peers it hears (the rest stay unused; the mesh stays connected); 0: a session with every peer it hears.")
    var sessionLimit = MeshDemo.Options().sessionLimit ?? 0

    @Option(help: "With --scenario mesh, how long (ms) a peer holds live changes on a session whose peer got them elsewhere first (lazy push), then sends what it still lacks; 0: lazy push off.")
    var lazyHold = MeshDemo.Options().lazyPushHold.map { Int($0 / .milliseconds(1)) } ?? 0

    @Option(help: "What carries the links, with --scenario mesh: loopback (in-process links, shaped as --link says) or ble-emulated (the emulated Bluetooth radio: AF_UNIX SOCK_SEQPACKET channels, the L2CAP code path, paced as an LE 1M PHY).")
    var transport: DemoTransport = .loopback

    @Option(help: "How the emulated links behave: lan (50 MB/s, 0.2 ms), ble (244-byte MTU, 20 KB/s, 15 ms) or instant.")
    var link: EmulatedLink = .lan

    @Option(help: "How long the peers write, in seconds.")
    var seconds = 10.0

    @Option(help: "Writes per second across the whole mesh (each by a random peer); with --scenario failover, messages per second each way (default 100).")
    var rate: Double?

    @Flag(help: "Drop links at random while the peers write, and bring them back a few seconds later.")
    var drops = false

    @Option(help: "With --drops, the mean seconds between two link drops anywhere in the mesh.")
    var dropEvery = 1.0

    @Option(help: "How long to wait for convergence after the writing stops, in seconds.")
    var settle = 120.0

    @Option(help: "Seed for the topology, the writes and the drops (default: random; printed).")
    var seed: UInt64?

    @Flag(help: "With --scenario mesh, secure every link as the mesh does: a Noise handshake with a shared secret (each peer its own identity), then sealed frames. bytes_per_peer then counts handshakes and tags too.")
    var secure = false

    @Flag(help: "Print no progress on standard error.")
    var quiet = false

    func validate() throws {
        guard transport == .loopback || scenario == .mesh else {
            throw ValidationError("--transport \(transport.rawValue) is available with --scenario mesh only")
        }
        // Every emulated channel is a thread and three descriptors at each end.
        guard transport == .loopback || peers <= 128 else { throw ValidationError("--transport ble-emulated takes at most 128 peers") }
        guard !secure || scenario == .mesh else { throw ValidationError("--secure is available with --scenario mesh only") }
        guard degree >= 1, sessionLimit >= 0 else { throw ValidationError("--degree must be at least 1; --session-limit must not be negative") }
        guard peers >= 1, peers <= 1024 else { throw ValidationError("--peers must be between 1 and 1024") }
        guard hops >= 1, hops <= AttachmentDemo.maximumHops else {
            throw ValidationError("--hops must be between 1 and \(AttachmentDemo.maximumHops): a fetch is relayed through at most \(AttachmentDemo.maximumHops - 1) peers (Docs/Sync.md, Attachments)")
        }
        guard bytes >= 2, bytes <= 1 << 30 else { throw ValidationError("--bytes must be between 2 and 1 GiB") }
        guard seconds >= 0, rate.map({ $0 > 0 }) ?? true, dropEvery > 0, settle > 0 else {
            throw ValidationError("--seconds must not be negative; --rate, --drop-every and --settle must be positive")
        }
    }

    func run() async throws {
        switch scenario {
        case .mesh: try await runMesh()
        case .attachment: try await runAttachment()
        case .failover: try await runFailover()
        case .presence: try await runPresence()
        }
    }

    enum Scenario: String, ExpressibleByArgument, CaseIterable {
        case mesh, attachment, failover, presence
    }

    func runAttachment() async throws {
        var options = AttachmentDemo.Options()
        options.hops = hops
        options.bytes = bytes
        options.link = link
        options.seed = seed ?? UInt64.random(in: 1...UInt64.max)
        let figures = try await withProgress("demo: a \(bytes)-byte attachment across \(hops) hops of \(link.rawValue) links, seed \(options.seed)") {
            try await AttachmentDemo(options: options).run(progress: $0)
        }
        print(figures.jsonLine)
        if !figures.verified { throw ExitCode(1) }
    }

    func runFailover() async throws {
        var options = FailoverDemo.Options()
        options.seconds = seconds
        if let rate { options.rate = rate }
        options.seed = seed ?? UInt64.random(in: 1...UInt64.max)
        let figures = try await withProgress("demo: failover between a lan and a ble link, \(options.rate) messages/s each way, seed \(options.seed)") {
            try await FailoverDemo(options: options).run(progress: $0)
        }
        print(figures.jsonLine)
        if figures.lost > 0 || figures.duplicated > 0 || figures.switchSeconds == nil { throw ExitCode(1) }
    }

    func runPresence() async throws {
        var options = PresenceDemo.Options()
        options.peers = peers
        options.shape = topology
        options.seconds = seconds
        options.settleLimit = settle
        options.seed = seed ?? UInt64.random(in: 1...UInt64.max)
        let figures = try await withProgress("demo: presence over \(peers) peers, \(topology.rawValue) topology, seed \(options.seed)") {
            try await PresenceDemo(options: options).run(progress: $0)
        }
        print(figures.jsonLine)
        print(figures.afterCutLine)
        if !figures.routesOK || (!figures.cutLink.isEmpty && figures.afterCutSeconds == nil) { throw ExitCode(1) }
    }

    /// Runs a scenario with `header` and its progress lines on standard error, unless --quiet.
    private func withProgress<Figures>(
        _ header: String, _ run: (@escaping @Sendable (String) -> Void) async throws -> Figures
    ) async throws -> Figures {
        let quiet = self.quiet
        if !quiet { Terminal.writeError(header + "\n") }
        return try await run { line in
            if !quiet { Terminal.writeError(line + "\n") }
        }
    }

    func runMesh() async throws {
        var options = MeshDemo.Options()
        options.peers = peers
        options.shape = topology
        options.degree = degree
        options.sessionLimit = sessionLimit == 0 ? nil : sessionLimit
        options.lazyPushHold = lazyHold <= 0 ? nil : .milliseconds(lazyHold)
        options.seconds = seconds
        if let rate { options.rate = rate }
        options.drops = drops
        options.meanTimeBetweenDrops = dropEvery
        options.settleLimit = settle
        options.seed = seed ?? UInt64.random(in: 1...UInt64.max)
        options.link = link
        options.transport = transport
        options.secure = secure
        let quiet = self.quiet
        if !quiet {
            Terminal.writeError("demo: \(peers) peers, \(topology.rawValue) topology\(topology == .random ? " of degree \(degree)" : ""), \(sessionLimit == 0 ? "no session limit" : "at most \(sessionLimit) sessions a peer"), \(transport == .loopback ? link.rawValue : transport.rawValue) links\(secure ? ", secured" : ""), seed \(options.seed)\n")
        }
        let figures = try await MeshDemo(options: options).run { line in
            if !quiet { Terminal.writeError(line + "\n") }
        }
        print(figures.jsonLine)
        if !figures.converged { throw ExitCode(1) }
    }
}

extension Topology.Shape: ExpressibleByArgument {}
extension EmulatedLink: ExpressibleByArgument {}

extension DemoTransport: ExpressibleByArgument {}
