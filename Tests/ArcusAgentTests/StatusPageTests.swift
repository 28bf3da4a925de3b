import ArcusCRDT
import ArcusTestSupport
import Foundation
import Testing

/// The agent's status: the page at `GET /` as a real browser (headless Chromium) runs it, and
/// `arcus status`, against three agent processes that dial each other over LAN TCP on 127.0.0.1
/// (static peers, so no avahi-daemon is needed).
@Suite(.serialized)
struct StatusPageTests {
    @Test("the status page, opened in headless Chromium through the link `arcus status --page` prints, draws each of the three peers of a mesh as one node of its SVG graph")
    func statusPageDrawsTheMesh() async throws {
        let chromium = try HeadlessChromium()
        let scratch = try MeshScratch("status-page")
        defer { scratch.remove() }
        let agents = try await Self.launchTriangle(scratch)
        defer { for agent in agents { agent.stop() } }
        try await Self.waitUntilEachSeesTheOthers(agents)

        let page = try await agents[0].request(.GET, "/")
        #expect(page.status == 200)
        #expect(!page.body.contains("src=\"http") && !page.body.contains("href=\"http"), "the page must carry everything it needs")

        // As a user opens it: the link the CLI prints, which carries the token after the #.
        let link = try await ArcusProcess.run(["status", "--page", "--agent", agents[0].url])
        #expect(link.status == 0, "\(link.standardError)")
        let address = link.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(address == agents[0].url + "/#token=" + agents[0].token, "\(address)")
        let dom = try await chromium.dumpDOM(address)
        #expect(!dom.contains(agents[0].token), "the token stayed in the page")
        let graph = try #require(Self.meshGraph(in: dom), "no <svg id=\"mesh\"> in the page Chromium rendered:\n\(dom.prefix(2000))")
        let nodes = Self.dataPeers(in: graph)
        #expect(nodes.count == 3, "\(graph)")
        #expect(Set(nodes) == Set(agents.map(\.peer)), "\(graph)")
        #expect(graph.contains("data-peer=\"\(agents[0].peer)\" class=\"peer self\""), "this agent's node is not highlighted: \(graph)")
        #expect(graph.contains("data-transport=\"lan\""), "no LAN link drawn: \(graph)")
        // The subscription's sync with each of the two other peers, with its progress bar.
        let syncRows = dom.matches(of: /<tr data-sync="1 [0-9a-f]+">.*?<\/tr>/).map { String($0.output) }
        #expect(syncRows.count == 2, "\(dom.prefix(4000))")
        #expect(syncRows.allSatisfy { $0.contains("<progress") && $0.contains("caught up") }, "\(syncRows)")
        #expect(dom.contains("none under way"), "no attachment fetches section")

        // Without the token, the page shows no data, and says how to open it.
        let bare = try await chromium.dumpDOM(agents[0].url + "/")
        #expect(Self.dataPeers(in: Self.meshGraph(in: bare) ?? "").isEmpty, "\(bare.prefix(3000))")
        #expect(!bare.contains(agents[0].peer), "the page showed the agent's peer id without the token")
        #expect(bare.contains(#"<p id="token-help">"#) && bare.contains("arcus status --page"), "\(bare.prefix(3000))")
    }

    @Test("arcus status summarises the agent: store per collection, peers, links per transport, sync, subscriptions; --json prints GET /v1/status")
    func statusCommand() async throws {
        let scratch = try MeshScratch("status-command")
        defer { scratch.remove() }
        let agents = try await Self.launchTriangle(scratch)
        defer { for agent in agents { agent.stop() } }
        try await Self.waitUntilEachSeesTheOthers(agents)
        let written = try await agents[0].execute("INSERT INTO trucks DOCUMENTS ({'_id': 'status-1', 'make': 'scania'}), ({'_id': 'status-2', 'make': 'volvo'})")
        #expect(written.status == 200, "\(written.body)")

        let json = try await ArcusProcess.run(["status", "--agent", agents[0].url, "--json"])
        #expect(json.status == 0, "\(json.standardError)")
        let status = try #require(try? Value(json: json.standardOutput), "not JSON: \(json.standardOutput)")
        #expect(status["peer"] == .string(agents[0].peer))
        #expect(status["name"] == .string("status-0"))
        #expect(status["subscriptions"]?.arrayValue?.first?["query"] == .string("SELECT * FROM cars"))
        #expect(status["store"]?["collections"] == .array([.object(["name": "trucks", "documents": .int(2)])]), "\(json.standardOutput)")
        #expect((status["store"]?["bytes"]?.numberValue ?? 0) > 0)
        #expect(status["sync"]?["sessions"]?.numberValue == 2, "\(json.standardOutput)")
        #expect(status["uptime_seconds"]?.numberValue != nil)
        let peers = status["graph"]?["peers"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        #expect(Set(peers) == Set(agents.map(\.peer)), "\(json.standardOutput)")

        let table = try await ArcusProcess.run(["status", "--agent", agents[0].url])
        #expect(table.status == 0, "\(table.standardError)")
        let lines = table.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("agent") && $0.contains("status-0 (\(agents[0].peer))") }, "\(table.standardOutput)")
        #expect(lines.contains { $0.hasPrefix("store") && $0.contains("2 documents in 1 collection,") }, "\(table.standardOutput)")
        #expect(lines.contains { $0.hasPrefix("  trucks") && $0.hasSuffix("2") }, "\(table.standardOutput)")
        #expect(lines.contains { $0.hasPrefix("sync") && $0.contains("2 sessions") }, "\(table.standardOutput)")
        #expect(lines.contains { $0.hasPrefix("subscriptions") && $0.contains("#1 SELECT * FROM cars") }, "\(table.standardOutput)")
        #expect(lines.contains { $0.hasPrefix("FROM") && $0.contains("TRANSPORT") && $0.contains("THROUGHPUT") }, "\(table.standardOutput)")
        for agent in agents {
            #expect(lines.contains { $0.hasPrefix(agent.peer) }, "peer \(agent.peer) missing: \(table.standardOutput)")
        }
        #expect(lines.filter { $0.contains(" lan ") && $0.contains("active") }.count == 3, "\(table.standardOutput)")
    }

    @Test("arcus status with no agent at the URL says so and how to start one, with exit status 1")
    func statusWithoutAgent() async throws {
        let url = "http://127.0.0.1:\(try freePort())"
        let outcome = try await ArcusProcess.run(["status", "--agent", url])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("no agent at \(url)"), "\(outcome.standardError)")
        #expect(outcome.standardError.contains("arcus agent --data DIR"), "\(outcome.standardError)")
        #expect(outcome.standardOutput.isEmpty)
    }

    // MARK: - The mesh

    /// Three agents on LAN TCP, each dialling those started before it: every pair gets a link.
    /// If one fails to start, those already running are stopped.
    static func launchTriangle(_ scratch: MeshScratch) async throws -> [RunningAgent] {
        let ports = try (0..<3).map { _ in try freePort() }
        var agents: [RunningAgent] = []
        do {
            for (index, port) in ports.enumerated() {
                let dials = ports[..<index].flatMap { ["--peer", "127.0.0.1:\($0)"] }
                agents.append(try await RunningAgent.launch(
                    data: scratch.data("agent-\(index)"),
                    ["--config", scratch.config.path, "--transports", "lan", "--name", "status-\(index)",
                     "--listen", "127.0.0.1:\(port)", "--subscribe", "SELECT * FROM cars"] + dials
                ))
            }
        } catch {
            for agent in agents { await agent.halt() }
            throw error
        }
        return agents
    }

    /// Until each agent's `GET /v1/peers` lists all three peers and the three links between
    /// them, and its two sync sessions run (up to 60 s; about a second on loopback).
    static func waitUntilEachSeesTheOthers(_ agents: [RunningAgent]) async throws {
        let everyone = Set(agents.map(\.peer))
        for agent in agents {
            var (seen, links, sessions): (Set<String>, Int, Double?) = ([], 0, nil)
            for _ in 0..<600 {
                let graph = try? await agent.request(.GET, "/v1/peers").json
                seen = Set(graph?["peers"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [])
                links = graph?["links"]?.arrayValue?.filter { $0["active"] == true }.count ?? 0
                sessions = try? await agent.request(.GET, "/v1/status").json?["sync"]?["sessions"]?.numberValue
                if seen == everyone && links == 3 && sessions == 2 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            try #require(seen == everyone, "agent \(agent.peer) sees \(seen), not all of \(everyone):\n\(agent.log)")
            try #require(links == 3 && sessions == 2, "agent \(agent.peer) has \(links) active links and \(sessions ?? 0) sync sessions, not 3 and 2:\n\(agent.log)")
        }
    }

    // MARK: - The rendered page

    /// The `<svg id="mesh">…</svg>` element of a dumped DOM.
    static func meshGraph(in dom: String) -> String? {
        guard let start = dom.range(of: "<svg id=\"mesh\""), let end = dom.range(of: "</svg>", range: start.upperBound..<dom.endIndex) else { return nil }
        return String(dom[start.lowerBound..<end.upperBound])
    }

    static func dataPeers(in markup: String) -> [String] {
        markup.matches(of: /data-peer="([^"]*)"/).map { String($0.output.1) }
    }
}

/// Debian's `chromium`, headless, on a profile directory of its own. Its absence fails the test
/// with what to do: the status page is tested in a real browser, and CI installs one.
struct HeadlessChromium {
    let executable: URL

    init() throws {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let candidates = path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent("chromium") }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw ArcusProcess.ProcessError("chromium is not installed, and the status page is tested in a headless browser: run Tools/install-deps.sh (CI installs it)")
        }
        executable = found
    }

    /// The DOM after the page's scripts ran for 5 s of virtual time (the page polls every
    /// second; Chromium exits when the budget is spent). Killed after 120 s if it has not.
    /// - Parameter resolving: names that resolve to 127.0.0.1 (every other name but 127.0.0.1
    ///   itself fails to resolve), as a DNS-rebinding page's name would.
    func dumpDOM(_ url: String, resolving names: [String] = []) async throws -> String {
        let rules = names.isEmpty ? [] : ["--host-resolver-rules=" + names.map { "MAP \($0) 127.0.0.1" }.joined(separator: ", ") + ", " + Self.resolverRules]
        return try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try run(rules + ["--virtual-time-budget=5000", "--dump-dom", url]) }) }.start()
        }
    }

    static let resolverRules = "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"

    /// Chromium's own traffic (component updates, field trials, safe browsing, DNS prefetch) is
    /// turned off, and every host name but the loopback address fails to resolve: the test must
    /// send no packet beyond 127.0.0.0/8.
    static let loopbackOnly = [
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
        "--disable-domain-reliability", "--disable-client-side-phishing-detection", "--no-first-run", "--no-pings",
        "--dns-prefetch-disable", "--metrics-recording-only", "--host-resolver-rules=" + resolverRules,
    ]

    private func run(_ arguments: [String]) throws -> String {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let out = scratch.appendingPathComponent("out"), err = scratch.appendingPathComponent("err")
        FileManager.default.createFile(atPath: out.path, contents: nil)
        FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = Process()
        process.executableURL = executable
        // A later --host-resolver-rules (with the names to map first) replaces the default one.
        let resolving = arguments.contains { $0.hasPrefix("--host-resolver-rules=") }
        process.arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(scratch.appendingPathComponent("profile").path)"]
            + Self.loopbackOnly.filter { !(resolving && $0.hasPrefix("--host-resolver-rules=")) } + arguments
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        let pid = process.processIdentifier
        let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 120, execute: watchdog)
        defer { watchdog.cancel() }
        process.waitUntilExit()
        let output = try String(contentsOf: out, encoding: .utf8)
        guard process.terminationStatus == 0, !output.isEmpty else {
            let error = (try? String(contentsOf: err, encoding: .utf8)) ?? ""
            throw ArcusProcess.ProcessError("chromium exited with status \(process.terminationStatus): \(error.suffix(2000))")
        }
        return output
    }
}

/// Reading the JSON answers.
fileprivate extension Value {
    subscript(key: String) -> Value? { objectValue?[key] }

    var arrayValue: [Value]? { if case .array(let items) = self { return items } else { return nil } }
}
