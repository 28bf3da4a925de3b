import Foundation
import ArcusCRDT

/// `arcus peers` without `--json`: the presence graph as a table a person reads, peers first,
/// then links.
public struct PeersTable {
    public let text: String

    /// Reads what `GET /v1/peers` answers.
    public init(json: String) throws(CommandError) {
        guard case .object(let graph)? = try? Value(json: json), case .array(let peers)? = graph["peers"] else {
            throw CommandError("the agent's /v1/peers answer is not a presence graph: \(json.prefix(200))")
        }
        var peerRows = [["PEER", "NAME", "HOPS", "VIA"]]
        for case .object(let peer) in peers {
            let isSelf = peer["self"] == .bool(true)
            peerRows.append([
                (peer["id"]?.stringValue ?? "?") + (isSelf ? " (this agent)" : ""),
                peer["name"]?.stringValue ?? "",
                isSelf ? "0" : Self.cell(peer["hops"]),
                peer["next_hop"]?.stringValue ?? "",
            ])
        }
        var lines = Self.columns(peerRows)
        if case .array(let links)? = graph["links"], !links.isEmpty {
            var linkRows = [["FROM", "TO", "TRANSPORT", "RTT MS", "ACTIVE"]]
            for case .object(let link) in links {
                linkRows.append([
                    link["a"]?.stringValue ?? "?", link["b"]?.stringValue ?? "?", link["transport"]?.stringValue ?? "?",
                    Self.cell(link["rtt_ms"]), link["active"] == .bool(true) ? "yes" : "no",
                ])
            }
            lines += [""] + Self.columns(linkRows)
        } else {
            lines += ["", "no links"]
        }
        if case .array(let decisions)? = graph["admission"], !decisions.isEmpty {
            var rows = [["ADMISSION", "PEER", "NAME", "TRANSPORT", "BY", "REASON"]]
            for case .object(let decision) in decisions {
                rows.append([
                    decision["admitted"] == .bool(true) ? "admitted" : "refused", decision["peer"]?.stringValue ?? "?",
                    decision["name"]?.stringValue ?? "", decision["transport"]?.stringValue ?? "",
                    decision["by"]?.stringValue ?? "", decision["reason"]?.stringValue ?? "",
                ])
            }
            lines += [""] + Self.columns(rows)
        }
        text = lines.joined(separator: "\n")
    }

    private static func cell(_ value: Value?) -> String {
        switch value {
        case .int(let number)?: return String(number)
        case .string(let string)?: return string
        default: return "-"
        }
    }

    private static func columns(_ rows: [[String]]) -> [String] {
        let widths = (0..<(rows.first?.count ?? 0)).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            zip(row, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }
    }
}
