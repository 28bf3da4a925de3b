import ArcusAgent
import ArcusCRDT
import ArcusStore
import Foundation

/// `arcus bench lan`: two `arcus agent` processes, as users run them, each with its own data
/// directory and identity, linked by their LAN transports on 127.0.0.1 (`--listen 127.0.0.1:0`,
/// the follower `--peer`ing the source, `--no-mdns`: nothing is published, no packet leaves
/// 127.0.0.0/8) with a fresh shared secret, so the link is sealed as agents run.
///
/// 1. Load: N documents shaped like the fleet trace's, written into the source's data directory
///    by this process, in transactions of 1,000, before the source agent starts.
/// 2. Catch-up: a fresh follower is started and dials the source; timed from its start (process
///    start-up included) until its `arcus_sync_documents_received_total` reaches N, read from its
///    `/metrics` as it goes. Bytes are every byte on the TCP link both ways (handshake, session
///    frames, AEAD tags), the follower's `arcus_link_bytes_total{transport="lan"}`. Each agent's
///    processor time over the catch-up (user and system, from /proc/PID/stat) is what the
///    catch-up costs a device's cores, whatever else shares this machine.
/// 3. Steady state: one document updated through the source's API (`POST /v1/execute`), one at a
///    time; the latency is from the request until the follower's `GET /v1/observe` stream shows
///    the new value (HTTP both ways, commit, sync, merge, observer).
/// 4. Each agent's peak resident size (VmHWM from /proc/PID/status, read until just before it is
///    stopped) and the largest anonymous part of it sampled (RssAnon: the heap, without the
///    binary's file pages); then both stores are compared, a document at a time, by
///    `Store.contentDigest`.
///
/// With `confinement`, the follower runs in a cgroup of its own (`ConfinementCgroup`): a quarter
/// of one core and 256 MiB by default, as a small board would give it.
public struct LANBench {
    public struct Options: Sendable {
        public var documents = 100_000
        public var updates = 500
        /// Rest between updates, so that each one finds the link idle.
        public var pause: Duration = .milliseconds(10)
        public var scratch = URL(fileURLWithPath: FileManager.default.temporaryDirectory.path)
        /// The `arcus` executable the agents run (by default this one).
        public var executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        /// Confine the follower in a cgroup with these limits.
        public var confineFollower = false
        public var confinementQuota = 25_000
        public var confinementPeriod = 100_000
        public var confinementMemoryBytes = 256 << 20
        /// How long the follower may take to catch up before the bench gives up.
        public var patience: Duration = .seconds(1800)

        public init() {}
    }

    public struct Figures: Sendable {
        public var documents = 0
        public var jsonBytes = 0
        public var loadSeconds = 0.0
        /// Whether the follower caught up every document (false: it died or ran out of time).
        public var completed = false
        public var catchUpSeconds = 0.0
        public var wireBytes = 0
        public var syncFrameBytes = 0
        public var updates = 0
        public var latencyP50 = 0.0
        public var latencyP99 = 0.0
        public var latencyMax = 0.0
        public var converged = false
        public var sourcePeakRSSMiB = 0.0
        public var followerPeakRSSMiB = 0.0
        /// Of each peak, the largest anonymous part sampled (heap, not code).
        public var sourcePeakAnonymousMiB = 0.0
        public var followerPeakAnonymousMiB = 0.0
        /// Processor time (user and system) each agent spent during the catch-up, in seconds.
        public var sourceCatchUpCPUSeconds: Double?
        public var followerCatchUpCPUSeconds: Double?
        public var followerExit = ""
        /// With a confined follower: its limits, the hierarchy, the cgroup's peak charge (memory
        /// and page cache) and how many processes the OOM killer took.
        public var confinement: String?
        public var cgroupHierarchy: String?
        public var cgroupPeakMiB: Double?
        public var oomKills: Int?
        /// Why the catch-up did not complete, when it did not.
        public var failure: String?

        public var jsonLine: String {
            func r(_ x: Double, _ digits: Double) -> Value { .double((x * digits).rounded() / digits) }
            var fields: [(String, Value)] = [
                ("bench", "lan"), ("documents", .int(Int64(documents))), ("completed", .bool(completed)),
                ("catch_up_s", r(catchUpSeconds, 1000)),
                ("docs_per_s", .int(completed ? Int64((Double(documents) / max(catchUpSeconds, 1e-9)).rounded()) : 0)),
                ("source_peak_rss_mb", r(sourcePeakRSSMiB, 10)), ("follower_peak_rss_mb", r(followerPeakRSSMiB, 10)),
                ("source_peak_anon_mb", r(sourcePeakAnonymousMiB, 10)), ("follower_peak_anon_mb", r(followerPeakAnonymousMiB, 10)),
                ("wire_bytes", .int(Int64(wireBytes))), ("json_bytes", .int(Int64(jsonBytes))),
                ("wire_per_json", r(Double(wireBytes) / Double(max(jsonBytes, 1)), 1000)),
                ("sync_frame_bytes", .int(Int64(syncFrameBytes))), ("converged", .bool(converged)),
                ("updates", .int(Int64(updates))), ("update_p50_ms", r(latencyP50 * 1e3, 1000)),
                ("update_p99_ms", r(latencyP99 * 1e3, 1000)), ("update_max_ms", r(latencyMax * 1e3, 1000)),
                ("load_s", r(loadSeconds, 1000)), ("follower_exit", .string(followerExit)),
            ]
            if completed, let source = sourceCatchUpCPUSeconds, let follower = followerCatchUpCPUSeconds {
                let perDocument = { (seconds: Double) in r(seconds * 1e6 / Double(max(documents, 1)), 100) }
                fields += [
                    ("source_catch_up_cpu_s", r(source, 1000)), ("follower_catch_up_cpu_s", r(follower, 1000)),
                    ("source_cpu_us_per_doc", perDocument(source)), ("follower_cpu_us_per_doc", perDocument(follower)),
                ]
            }
            if let confinement {
                fields += [
                    ("follower_confined", .string(confinement)), ("cgroup", cgroupHierarchy.map { .string($0) } ?? .null),
                    ("follower_cgroup_peak_mb", cgroupPeakMiB.map { r($0, 10) } ?? .null),
                    ("follower_oom_kills", oomKills.map { .int(Int64($0)) } ?? .null),
                ]
            }
            if let failure { fields.append(("failure", .string(failure))) }
            fields.append(("transport", "two arcus agent processes, lan tcp 127.0.0.1, sealed"))
            return FigureLine.json(fields)
        }
    }

    public let options: Options

    public init(options: Options) {
        self.options = options
    }

    public func run(progress: ((String, Double) -> Void)? = nil) async throws -> Figures {
        let scratch = options.scratch.appendingPathComponent("arcus-bench-lan-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        // Made first: without cgroups, say so before minutes of loading.
        let cgroup = try options.confineFollower ? ConfinementCgroup(
            name: "arcus-bench-follower-\(ProcessInfo.processInfo.processIdentifier)",
            limits: .init(quotaMicroseconds: options.confinementQuota, periodMicroseconds: options.confinementPeriod, memoryBytes: options.confinementMemoryBytes)
        ) : nil
        var agents: [AgentProcess] = []
        do {
            let figures = try await measure(in: scratch, cgroup: cgroup, agents: &agents, progress: progress)
            for agent in agents.reversed() { _ = await agent.stop() }
            cgroup?.remove()
            return figures
        } catch {
            for agent in agents.reversed() { _ = await agent.stop() }
            cgroup?.remove()
            throw error
        }
    }

    private func measure(
        in scratch: URL, cgroup: ConfinementCgroup?, agents: inout [AgentProcess], progress: ((String, Double) -> Void)?
    ) async throws -> Figures {
        var figures = Figures()
        figures.documents = options.documents
        let secret = try TwoAgentBench.secret(in: scratch)
        let (sourceData, followerData) = (scratch.appendingPathComponent("source"), scratch.appendingPathComponent("follower"))

        // The source's store, loaded before its agent runs, under the site its identity names.
        let loadStarted = monotonicSeconds()
        do {
            var storeOptions = Store.Options()
            storeOptions.synchronous = .normal
            let (store, _) = try DataDirectoryStore.open(sourceData, options: storeOptions)
            figures.jsonBytes = try TwoAgentBench.writeFleet(options.documents, into: store, progress: progress)
        }
        figures.loadSeconds = monotonicSeconds() - loadStarted

        func arguments(_ name: String, data: URL, peer: String?) -> [String] {
            ["--data", data.path, "--name", name, "--transports", "lan", "--listen", "127.0.0.1:0", "--no-mdns", "--http", "127.0.0.1:0",
             "--subscribe", "SELECT * FROM orders", "--log-level", "warning"] + (peer.map { ["--peer", $0] } ?? [])
        }
        let environment = ["ARCUS_MESH_SECRET_FILE": secret.path]
        progress?("starting the source agent", 0)
        let source = try await AgentProcess(
            name: "source", executable: options.executable, arguments: arguments("source", data: sourceData, peer: nil),
            environment: environment, logs: scratch
        )
        agents.append(source)
        guard let address = source.lanAddress else { throw BenchError("the source agent's ready line names no LAN address: is its LAN transport running? \(source.lastWords)") }

        // A fresh follower dials it and catches up.
        let catchUpStarted = monotonicSeconds()
        let sourceCPUBefore = ProcessCPUTime.seconds(pid: source.pid)
        let follower = try await AgentProcess(
            name: "follower", executable: options.executable, arguments: arguments("follower", data: followerData, peer: address),
            environment: environment, logs: scratch, wrap: cgroup.map { cgroup in { cgroup.wrap($0) } } ?? { $0 }
        )
        agents.append(follower)
        do {
            try await waitForCatchUp(follower, source: source, progress: progress)
            figures.catchUpSeconds = monotonicSeconds() - catchUpStarted
            figures.completed = true
            if let before = sourceCPUBefore, let after = ProcessCPUTime.seconds(pid: source.pid) { figures.sourceCatchUpCPUSeconds = after - before }
            figures.followerCatchUpCPUSeconds = ProcessCPUTime.seconds(pid: follower.pid)
        } catch let error as BenchError {
            figures.failure = error.description
        }

        if figures.completed {
            let metrics = try await follower.client.metrics()
            let samples = PrometheusSamples(
                text: metrics, names: ["arcus_link_bytes_total", "arcus_sync_bytes_sent_total", "arcus_sync_bytes_received_total"]
            )
            figures.wireBytes = Int(samples.value("arcus_link_bytes_total", ["transport": "lan", "direction": "sent"]) ?? 0)
                + Int(samples.value("arcus_link_bytes_total", ["transport": "lan", "direction": "received"]) ?? 0)
            figures.syncFrameBytes = Int(samples.value("arcus_sync_bytes_sent_total") ?? 0) + Int(samples.value("arcus_sync_bytes_received_total") ?? 0)
            let latencies = try await updateLatencies(from: source, to: follower, progress: progress)
            figures.updates = latencies.count
            (figures.latencyP50, figures.latencyP99, figures.latencyMax) = (latencies.p50, latencies.p99, latencies.max)
        }

        progress?("stopping the agents", 1)
        figures.followerExit = await follower.stop().description
        _ = await source.stop()
        figures.sourcePeakRSSMiB = Double(source.peakKiB) / 1024
        figures.followerPeakRSSMiB = Double(follower.peakKiB) / 1024
        figures.sourcePeakAnonymousMiB = Double(source.peakAnonymousKiB) / 1024
        figures.followerPeakAnonymousMiB = Double(follower.peakAnonymousKiB) / 1024
        if let cgroup {
            figures.confinement = cgroup.limits.description
            figures.cgroupHierarchy = cgroup.hierarchy.rawValue
            figures.cgroupPeakMiB = cgroup.peakMemoryBytes.map { Double($0) / 1_048_576 }
            figures.oomKills = cgroup.oomKills
        }
        if figures.completed {
            progress?("comparing the two stores", 1)
            figures.converged = try Self.sameOrders(sourceData, followerData, documents: options.documents)
        }
        return figures
    }

    /// Returns once the follower has merged `options.documents` documents, reading its `/metrics`
    /// (and both agents' peak resident sizes) every 200 ms. Throws if the follower exits first
    /// or runs out of time.
    private func waitForCatchUp(_ follower: AgentProcess, source: AgentProcess, progress: ((String, Double) -> Void)?) async throws {
        let started = ContinuousClock.now
        let name = "arcus_sync_documents_received_total"
        while true {
            source.sampleMemory()
            let resident = follower.sampleMemory()
            guard follower.isRunning else {
                let ended = await follower.stop()
                throw BenchError("the follower agent ended (\(ended)) before it caught up: \(follower.lastWords)")
            }
            // A scrape the agent could not answer (it is busy, or stopping) is retried.
            let received = Int((try? await follower.client.metrics()).flatMap { PrometheusSamples(text: $0, names: [name]).value(name) } ?? 0)
            if received >= options.documents { return }
            let rss = resident.map { ", \($0 >> 10) MiB resident" } ?? ""
            progress?("a fresh follower catching up (\(received) documents\(rss))", Double(received) / Double(options.documents))
            guard ContinuousClock.now - started < options.patience else {
                throw BenchError("the follower had not caught up after \(options.patience) (\(received) of \(options.documents) documents)")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Updates one document through the source's API `options.updates` times, one at a time,
    /// each timed from the request until the follower's observe stream shows it.
    private func updateLatencies(from source: AgentProcess, to follower: AgentProcess, progress: ((String, Double) -> Void)?) async throws -> Latencies {
        let id = FleetDocuments.id(7)
        let seen = AsyncStream.makeStream(of: Int64.self, bufferingPolicy: .bufferingNewest(16))
        let client = follower.client
        let observing = Task {
            try? await client.observe("SELECT * FROM orders WHERE _id = :id", arguments: ["id": .string(id)]) { line in
                // -1 for a result without a round: the first, which says the observer is in place.
                guard case .object(let event)? = try? Value(json: line), case .array(let items)? = event["items"] else { return }
                if case .object(let document)? = items.first, case .int(let round)? = document["benchRound"] {
                    seen.continuation.yield(round)
                } else {
                    seen.continuation.yield(-1)
                }
            }
            seen.continuation.finish()
        }
        defer { observing.cancel() }
        var iterator = seen.stream.makeAsyncIterator()
        guard await iterator.next() != nil else { throw BenchError("the follower's observe stream ended before its first result: \(follower.lastWords)") }
        let pause = options.pause
        return try await UpdateRounds.time(
            options.updates, pause: pause, observed: seen.continuation, seen: &iterator,
            describe: "one update at a time, through the API", progress: progress, beforeEach: { follower.sampleMemory() }
        ) { round in
            _ = try await source.client.execute(
                "UPDATE orders SET benchRound = :round WHERE _id = :id", arguments: ["round": .int(round), "id": .string(id)]
            )
        }
    }

    /// Whether the two data directories (their agents stopped) hold the same `orders`, all
    /// `documents` of them.
    static func sameOrders(_ a: URL, _ b: URL, documents: Int) throws -> Bool {
        let digests = try [a, b].map { directory in try DataDirectoryStore.open(directory).store.contentDigest(of: "orders") }
        return digests[0].documents == documents && digests[0].documents == digests[1].documents && digests[0].sha256 == digests[1].sha256
    }
}
