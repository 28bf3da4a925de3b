import ArcusAgent
import ArgumentParser
import Foundation

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Summarise a running agent: who it is, its uptime, store, peers and links, sync and subscriptions.",
        discussion: """
              arcus status --agent http://127.0.0.1:4747 [--json]
              arcus status --agent http://127.0.0.1:4747 --page

            The agent also serves this as a live page at its URL. The page shows data only with the agent's token: \
            --page prints a link that carries it (after the #, which the browser never sends anywhere); open it in a \
            browser on this machine. The link is as secret as the token: whoever holds it can read and change the store.
            """
    )

    @Option(help: "The agent's URL, as its ready line gives it.")
    var agent: String = "http://127.0.0.1:4747"

    @OptionGroup var token: AgentTokenOption

    @Flag(help: "Print the status as JSON (as GET /v1/status answers) instead of a summary.")
    var json = false

    @Flag(help: "Print a link that opens the status page in a browser, with the agent's token.")
    var page = false

    func validate() throws {
        if page && json { throw ValidationError("--page prints a link; --json goes without it") }
    }

    func run() async throws {
        do throws(CommandError) {
            let client = try AgentClient(url: agent, tokenFile: token.tokenFile)
            if page {
                guard let key = client.credential.token else { throw CommandError(client.credential.hint, exitStatus: 2) }
                // Only a link that works: the agent must take the token.
                _ = try await client.status()
                print(client.baseURL + "/#token=" + key.hex)
                return
            }
            let document = try await client.status()
            print(json ? document : try StatusSummary(json: document).text)
        } catch {
            Terminal.writeError(error.message + "\n")
            throw ExitCode(error.exitStatus)
        }
    }
}

/// `arcus status` without `--json`: what `GET /v1/status` answers, as aligned lines a person
/// reads: the agent, its store and sync figures, then its peers and its links.
struct StatusSummary {
    let text: String

    init(json: String) throws(CommandError) {
        let status: AgentStatus
        do {
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            status = try decoder.decode(AgentStatus.self, from: Data(json.utf8))
        } catch {
            throw CommandError("the agent's /v1/status answer is not a status document (\(error)): \(json.prefix(200))")
        }
        let names = Dictionary(status.graph.peers.map { ($0.id, $0.name ?? $0.id) }, uniquingKeysWith: { first, _ in first })

        var facts: [[String]] = [
            ["agent", "\(status.name) (\(status.peer))"],
            ["uptime", Self.duration(status.uptimeSeconds)],
            ["transports", status.transports.isEmpty ? "none running" : status.transports.joined(separator: ", ")],
            ["data", status.data],
        ]
        if let durability = status.durability { facts.append(["durability", durability]) }
        for (name, failure) in (status.transportsFailed ?? [:]).sorted(by: { $0.key < $1.key }) {
            facts.append(["transport \(name)", "did not start: \(failure)"])
        }
        let store = status.store
        if let error = store.error {
            facts.append(["store", "\(Self.bytes(store.bytes)) of database files; \(error)"])
        } else {
            let collections = store.collections ?? []
            facts.append([
                "store",
                "\(Self.count(store.documents ?? 0, "document")) in \(Self.count(collections.count, "collection")), "
                    + "\(Self.bytes(store.bytes)) of database files",
            ])
            facts += collections.map { ["  " + $0.name, "\($0.documents)"] }
        }
        let sync = status.sync
        facts.append([
            "sync",
            "\(Self.count(sync.sessions ?? 0, "session")), lag \(String(format: "%.1f", sync.lagSeconds ?? 0)) s; "
                + "sent \(Self.bytes(sync.bytesSent ?? 0)) (\(sync.framesSent ?? 0) frames), "
                + "received \(Self.bytes(sync.bytesReceived ?? 0)) (\(sync.framesReceived ?? 0) frames)",
        ])
        if status.subscriptions.isEmpty { facts.append(["subscriptions", "none"]) }
        for (index, subscription) in status.subscriptions.enumerated() {
            facts.append([index == 0 ? "subscriptions" : "", "#\(subscription.id) " + (subscription.query.isEmpty ? "the whole store" : subscription.query)])
            for peer in subscription.sync ?? [] {
                facts.append(["", "  from \(peer.label): " + SubscriptionProgress.describe(peer)])
            }
        }
        for (index, fetch) in (status.attachments ?? []).enumerated() {
            let total = fetch.totalBytes.map { " of " + Self.bytes(Int($0)) } ?? ""
            let percent = fetch.totalBytes.flatMap { $0 > 0 ? " (\(Int(100 * fetch.bytesFetched / $0))%)" : nil } ?? ""
            facts.append([
                index == 0 ? "attachments" : "",
                "\(fetch.hash.prefix(12))… \(fetch.state): \(Self.bytes(Int(fetch.bytesFetched)))\(total)\(percent)" + (fetch.source.map { " from \($0)" } ?? ""),
            ])
        }
        var lines = Self.columns(facts)

        var peerRows = [["PEER", "NAME", "HOPS", "VIA"]]
        for peer in status.graph.peers {
            peerRows.append([
                peer.id + (peer.isSelf ? " (this agent)" : ""), peer.name ?? "",
                peer.isSelf ? "0" : peer.hops.map(String.init) ?? "-",
                peer.nextHop.map { names[$0] ?? $0 } ?? "",
            ])
        }
        lines += [""] + Self.columns(peerRows)

        if status.graph.links.isEmpty {
            lines += ["", "no links"]
        } else {
            var linkRows = [["FROM", "TO", "TRANSPORT", "STATE", "RTT MS", "THROUGHPUT"]]
            for link in status.graph.links {
                linkRows.append([
                    names[link.a] ?? link.a, names[link.b] ?? link.b, link.transport, link.active ? "active" : "standby",
                    link.rttMs.map(String.init) ?? "-", link.throughput.map { Self.bytes($0) + "/s" } ?? "-",
                ])
            }
            lines += [""] + Self.columns(linkRows)
        }
        text = lines.joined(separator: "\n")
    }

    static func count(_ number: Int, _ noun: String) -> String {
        "\(Self.number(number)) \(noun)\(number == 1 ? "" : "s")"
    }

    static func duration(_ seconds: Double) -> String {
        let total = Int(max(0, seconds))
        let (days, hours, minutes, rest) = (total / 86_400, total % 86_400 / 3_600, total % 3_600 / 60, total % 60)
        if days > 0 { return "\(days)d \(hours)h \(minutes)m" }
        if hours > 0 { return "\(hours)h \(minutes)m \(rest)s" }
        return minutes > 0 ? "\(minutes)m \(rest)s" : "\(rest)s"
    }

    /// With thousands separated: 12,345.
    static func number(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var grouped = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { grouped.append(",") }
            grouped.append(digit)
        }
        return (value < 0 ? "-" : "") + grouped
    }

    /// Decimal units, as the status page shows them.
    static func bytes(_ count: Int) -> String {
        var value = Double(count)
        var unit = 0
        let units = ["B", "kB", "MB", "GB", "TB"]
        while value >= 1000 && unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f", value) + " " + units[unit]
    }

    /// Rows as aligned columns, two spaces apart, without trailing blanks.
    static func columns(_ rows: [[String]]) -> [String] {
        let widths = (0..<(rows.first?.count ?? 0)).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
    }
}

/// The parts of `GET /v1/status` the summary prints (Docs/Agent.md has all of it).
private struct AgentStatus: Decodable {
    struct Store: Decodable {
        struct Collection: Decodable { var name: String; var documents: Int }
        var bytes: Int
        var documents: Int?
        var collections: [Collection]?
        var error: String?
    }
    struct Sync: Decodable {
        var sessions: Int?
        var lagSeconds: Double?
        var bytesSent, bytesReceived, framesSent, framesReceived: Int?
    }
    struct Graph: Decodable {
        struct Peer: Decodable {
            var id: String
            var name: String?
            var isSelf: Bool
            var hops: Int?
            var nextHop: String?
            enum CodingKeys: String, CodingKey { case id, name, isSelf = "self", hops, nextHop }
        }
        struct Link: Decodable {
            var a, b, transport: String
            var active: Bool
            var rttMs: Int?
            var throughput: Int?
        }
        var peers: [Peer]
        var links: [Link]
    }
    var name, peer, data: String
    /// Absent from an agent older than the option.
    var durability: String?
    var transports: [String]
    var transportsFailed: [String: String]?
    var uptimeSeconds: Double
    var store: Store
    var sync: Sync
    var subscriptions: [SubscriptionProgress]
    struct AttachmentFetch: Decodable {
        var hash, state: String
        var bytesFetched: Int64
        var totalBytes: Int64?
        var source: String?
    }
    var attachments: [AttachmentFetch]?
    var graph: Graph
}
