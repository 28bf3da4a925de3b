import ArcusAgent
import ArcusCRDT

/// One look at a running agent, as `arcus field-test` samples it: who the agent is and its own
/// links (from `GET /v1/status`), and its per-transport counters (from `GET /metrics`).
public struct AgentReading: Sendable, Equatable {
    /// One link between this agent and a neighbour, as the presence graph measures it.
    public struct Link: Sendable, Equatable {
        public var peer: String
        public var peerName: String?
        public var transport: String
        public var active: Bool
        public var rttMilliseconds: Double?
        /// Bytes per second, as the transport estimates it (not every transport does).
        public var throughput: Double?
        /// For a Bluetooth link: the RSSI (dBm) the radio last heard the peer's adverts at.
        public var rssi: Int?
    }

    /// The counters of one transport, summed over all its links.
    public struct TransportCounters: Sendable, Equatable {
        /// `arcus_link_bytes_total`, both directions.
        public var bytes: Double = 0
        /// `arcus_handshakes_total{result="accepted"}`.
        public var handshakesAccepted: Double = 0
        /// `arcus_failovers_total`.
        public var failovers: Double = 0
    }

    public var name: String
    public var peer: String
    /// This agent's links only (a link between two other peers is not this agent's to record).
    public var links: [Link]
    public var counters: [String: TransportCounters]

    static let metricNames: Set<String> = ["arcus_link_bytes_total", "arcus_handshakes_total", "arcus_failovers_total"]

    /// - Parameters:
    ///   - status: the body of `GET /v1/status`.
    ///   - metrics: the body of `GET /metrics`.
    public init(status: String, metrics: String) throws(CommandError) {
        guard case .object(let document)? = try? Value(json: status),
              case .string(let name)? = document["name"], case .string(let local)? = document["peer"],
              case .object(let graph)? = document["graph"] else {
            throw CommandError("the agent's /v1/status answer is not a status document: \(status.prefix(200))")
        }
        self.name = name
        self.peer = local

        var names: [String: String] = [:]
        if case .array(let peers)? = graph["peers"] {
            for case .object(let peer) in peers {
                if case .string(let id)? = peer["id"], case .string(let name)? = peer["name"] { names[id] = name }
            }
        }
        var signal: [String: Int] = [:]
        if case .array(let heard)? = document["bluetooth_signal"] {
            for case .object(let entry) in heard {
                if case .string(let peer)? = entry["peer"], case .int(let dBm)? = entry["rssi_dbm"] { signal[peer] = Int(dBm) }
            }
        }
        var links: [Link] = []
        if case .array(let edges)? = graph["links"] {
            for case .object(let edge) in edges {
                guard case .string(let a)? = edge["a"], case .string(let b)? = edge["b"],
                      case .string(let transport)? = edge["transport"], a == local || b == local else { continue }
                let other = a == local ? b : a
                links.append(Link(
                    peer: other, peerName: names[other], transport: transport, active: edge["active"] == true,
                    rttMilliseconds: edge["rtt_ms"]?.numberValue, throughput: edge["throughput"]?.numberValue,
                    rssi: transport == "bluetooth" ? signal[other] : nil
                ))
            }
        }
        self.links = links.sorted { ($0.peer, $0.transport) < ($1.peer, $1.transport) }

        var counters: [String: TransportCounters] = [:]
        for (series, value) in PrometheusSamples(text: metrics, names: Self.metricNames).values {
            guard let transport = series.labels["transport"] else { continue }
            switch series.name {
            case "arcus_link_bytes_total": counters[transport, default: .init()].bytes += value
            case "arcus_handshakes_total" where series.labels["result"] == "accepted":
                counters[transport, default: .init()].handshakesAccepted += value
            case "arcus_failovers_total": counters[transport, default: .init()].failovers += value
            default: break
            }
        }
        self.counters = counters
    }
}
