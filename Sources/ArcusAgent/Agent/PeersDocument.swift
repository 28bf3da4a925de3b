import ArcusCRDT
import ArcusMesh

/// The presence graph as `GET /v1/peers` answers it: every peer known (this one first), every
/// link between two of them with its transport and measured quality, and the route to each
/// peer this one does not reach directly.
struct PeersDocument {
    let graph: PresenceGraph
    let local: PeerID
    /// The connection policy's latest decision on each peer it was asked about.
    var admissions: [AdmissionPolicy.Record] = []

    var json: Value {
        let routes = graph.routes(from: local)
        let peers = graph.peers.values.sorted { ($0.id == local ? 0 : 1, $0.id) < ($1.id == local ? 0 : 1, $1.id) }
        return .object([
            "admission": .array(admissions.map { record in
                .object([
                    "peer": .string(record.peer.description), "name": record.name.map(Value.string) ?? .null,
                    "admitted": .bool(record.decision.admitted), "by": .string(record.decision.by),
                    "reason": record.decision.reason.map(Value.string) ?? .null, "transport": .string(record.transport),
                    "at": .double((record.at.timeIntervalSince1970 * 1000).rounded() / 1000),
                ])
            }),
            "self": .string(local.description),
            "version": .int(Int64(graph.version)),
            "peers": .array(peers.map { peer in
                var object: [String: Value] = [
                    "id": .string(peer.id.description), "name": peer.name.map(Value.string) ?? .null,
                    "self": .bool(peer.id == local),
                    "metadata": .object(peer.metadata.mapValues(Value.string)),
                ]
                if let route = routes[peer.id] {
                    object["hops"] = .int(Int64(route.hops))
                    object["next_hop"] = .string(route.nextHop.description)
                }
                return .object(object)
            }),
            "links": .array(graph.links.sorted { ($0.key.low, $0.key.high, $0.key.kind.rawValue) < ($1.key.low, $1.key.high, $1.key.kind.rawValue) }.map { edge, quality in
                .object([
                    "a": .string(edge.low.description), "b": .string(edge.high.description),
                    "transport": .string(edge.kind.rawValue), "active": .bool(quality.isActive),
                    "rtt_ms": quality.rttMilliseconds.map { .int(Int64($0)) } ?? .null,
                    "throughput": quality.throughput.map { .int(Int64(clamping: $0)) } ?? .null,
                ])
            }),
        ])
    }
}
