import ArcusAgent
import ArcusCRDT
import Foundation

/// What `arcus field-test` writes: one JSON object per (peer, transport) link of the agent per
/// reading, between a start and an end event. It only computes lines; the command reads the
/// agent, keeps time and writes them.
///
/// Every figure is the agent's own, nothing is estimated here:
/// - `rtt_ms`, `throughput_bps`, `active`: the link as the presence graph measures it (`null`
///   where the transport does not measure it).
/// - `goodput_bps`: bytes per second over the last interval from `arcus_link_bytes_total` of
///   the link's transport, both directions added, handshake and encryption included. It is per
///   transport, not per peer: two peers on LAN show the same figure. `null` on the first reading.
/// - `reconnects`: successful (`accepted`) handshakes of the transport since the recording
///   began; `failovers`: `arcus_failovers_total` of the transport since it began.
/// - `rssi_dbm`: for a Bluetooth link, the RSSI the radio last heard the peer's adverts at, as
///   the adapter reported it through BlueZ (the emulated radio: as its topology file says);
///   `null` for other transports and when the adapter gave none.
public struct FieldRecorder: Sendable {
    /// How the recording was asked for, repeated in the start and end events.
    public struct Settings: Sendable {
        public var agentURL: String
        public var seconds: Double
        public var interval: Double
        public var output: String

        public init(agentURL: String, seconds: Double, interval: Double, output: String) {
            self.agentURL = agentURL
            self.seconds = seconds
            self.interval = interval
            self.output = output
        }

        var json: [String: Value] {
            ["agent_url": .string(agentURL), "seconds": .double(seconds), "interval": .double(interval), "out": .string(output)]
        }
    }

    public let settings: Settings
    private let baseline: AgentReading
    private var previous: (reading: AgentReading, t: Double)
    public private(set) var samplesWritten = 0
    public private(set) var peersSeen: Set<String> = []

    /// - Parameter baseline: the reading at `t` = 0, which counters are counted from.
    public init(baseline: AgentReading, settings: Settings) {
        self.baseline = baseline
        self.settings = settings
        previous = (baseline, 0)
    }

    public func startLine(time: Date) -> Value {
        event("start", t: 0, time: time, extra: [:])
    }

    /// - Parameter unreachable: readings that failed because the agent did not answer.
    public func endLine(t: Double, time: Date, unreachable: Int) -> Value {
        event("end", t: t, time: time, extra: [
            "samples": .int(Int64(samplesWritten)), "peers_seen": .int(Int64(peersSeen.count)), "unreachable": .int(Int64(unreachable)),
        ])
    }

    /// A reading the agent did not answer: a line saying so, so that a gap in the plots has a cause.
    public func unreachableLine(t: Double, time: Date, error: String) -> Value {
        .object(["t": .double(Self.rounded(t, 3)), "time": Self.timestamp(time), "event": "unreachable", "error": .string(error)])
    }

    /// The lines of one reading taken `t` seconds after the baseline, one per link, ordered by
    /// peer and transport.
    public mutating func samples(of reading: AgentReading, t: Double, time: Date) -> [Value] {
        let elapsed = t - previous.t
        let lines = reading.links.map { link -> Value in
            let now = reading.counters[link.transport] ?? .init()
            let before = previous.reading.counters[link.transport]
            let start = baseline.counters[link.transport] ?? .init()
            let goodput: Value = if let before, elapsed > 0 {
                .double(Self.rounded(max(0, now.bytes - before.bytes) / elapsed, 1))
            } else {
                .null
            }
            return .object([
                "t": .double(Self.rounded(t, 3)), "time": Self.timestamp(time),
                "agent": .string(reading.name), "agent_peer": .string(reading.peer),
                "peer": .string(link.peer), "peer_name": link.peerName.map(Value.string) ?? .null,
                "transport": .string(link.transport), "active": .bool(link.active),
                "rtt_ms": link.rttMilliseconds.map(Value.double) ?? .null,
                "throughput_bps": link.throughput.map(Value.double) ?? .null,
                "goodput_bps": goodput,
                "reconnects": .int(Int64(max(0, now.handshakesAccepted - start.handshakesAccepted))),
                "failovers": .int(Int64(max(0, now.failovers - start.failovers))),
                "rssi_dbm": link.rssi.map { .int(Int64($0)) } ?? .null,
            ])
        }
        previous = (reading, t)
        samplesWritten += lines.count
        peersSeen.formUnion(reading.links.map(\.peer))
        return lines
    }

    private func event(_ name: String, t: Double, time: Date, extra: [String: Value]) -> Value {
        var object: [String: Value] = [
            "t": .double(Self.rounded(t, 3)), "time": Self.timestamp(time), "event": .string(name),
            "agent": .string(baseline.name), "agent_peer": .string(baseline.peer), "settings": .object(settings.json),
        ]
        object.merge(extra) { $1 }
        return .object(object)
    }

    static func timestamp(_ time: Date) -> Value {
        .string(time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
    }

    static func rounded(_ value: Double, _ places: Int) -> Double {
        let scale = pow(10, Double(places))
        return (value * scale).rounded() / scale
    }
}
