import ArcusBluetooth
import ArcusCRDT
import ArcusMesh
import Foundation
import ArcusStore

/// The agent at a glance, as `GET /v1/status` answers it, `arcus status` prints it and the
/// status page (`GET /`) draws it: who the agent is and for how long it has run, what its store
/// holds, its presence graph (the `PeersDocument`, as `GET /v1/peers` answers it), how its sync
/// sessions fare, its subscriptions with their sync progress, and the attachment fetches under way.
///
/// The sync figures are those of the refresh that `GET /metrics` exports too.
package struct StatusDocument {
    let agent: Agent
    /// When the agent's HTTP API started, which is when the agent started serving.
    let startedAt: ContinuousClock.Instant

    package init(agent: Agent, startedAt: ContinuousClock.Instant) {
        self.agent = agent
        self.startedAt = startedAt
    }

    /// The RSSI the Bluetooth radio last heard each other peer of the presence graph at.
    private var signal: [(peer: PeerID, dBm: Int8)] {
        let radios = agent.transports.compactMap { $0 as? BluetoothTransport }
        guard !radios.isEmpty else { return [] }
        return agent.presence.graph.peers.keys.sorted().compactMap { peer in
            guard peer != agent.identity.peerID else { return nil }
            return radios.lazy.compactMap { $0.signalStrength(of: peer) }.first.map { (peer, $0) }
        }
    }

    package func json() async -> Value {
        let sync = await agent.metrics.refresh(from: agent.engine)
        let uptime = ContinuousClock.now - startedAt
        return .object([
            "name": .string(agent.configuration.name),
            "peer": .string(agent.identity.peerID.description),
            "data": .string(agent.configuration.dataDirectory),
            "durability": agent.settings.value(.durability),
            "transports": .array(agent.transportStarts.running.map { .string($0) }),
            "transports_failed": .object(agent.transportStarts.failed.mapValues { .string($0) }),
            "uptime_seconds": .double(uptime.inSeconds),
            "store": StoreFigures(store: agent.store, dataDirectory: agent.configuration.dataDirectory).json,
            "sync": sync.json,
            "subscriptions": SubscriptionDocument.all(agent),
            "attachments": .array(agent.engine.attachmentFetches.map(\.json)),
            "bluetooth_signal": .array(signal.map { .object(["peer": .string($0.peer.description), "rssi_dbm": .int(Int64($0.dBm))]) }),
            "graph": PeersDocument(graph: agent.presence.graph, local: agent.identity.peerID, admissions: agent.admission.decisions).json,
        ])
    }
}

/// What the store holds: live documents per collection, and the bytes of its database files
/// (the database, its write-ahead log and shared-memory index).
struct StoreFigures {
    let store: Store
    let dataDirectory: String

    static let databaseFile = "store.sqlite"

    var json: Value {
        var object: [String: Value] = ["bytes": .int(Int64(databaseBytes))]
        do {
            let counts = try store.documentCounts().sorted { $0.key < $1.key }
            object["collections"] = .array(counts.map { .object(["name": .string($0.key), "documents": .int(Int64($0.value))]) })
            object["documents"] = .int(Int64(counts.reduce(0) { $0 + $1.value }))
        } catch {
            object["error"] = .string("cannot count the documents in \(dataDirectory): \(error)")
        }
        return .object(object)
    }

    private var databaseBytes: Int {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dataDirectory)) ?? []
        return files.filter { $0.hasPrefix(Self.databaseFile) }.reduce(0) { total, file in
            let attributes = try? FileManager.default.attributesOfItem(atPath: (dataDirectory as NSString).appendingPathComponent(file))
            return total + ((attributes?[.size] as? NSNumber)?.intValue ?? 0)
        }
    }
}

extension SyncFigures {
    var json: Value {
        let counts: [String: Value] = [
            "sessions": .int(Int64(sessions)), "bytes_sent": .int(Int64(bytesSent)), "bytes_received": .int(Int64(bytesReceived)),
            "frames_sent": .int(Int64(framesSent)), "frames_received": .int(Int64(framesReceived)),
        ]
        return .object(counts.merging(["lag_seconds": .double(lagSeconds)]) { $1 })
    }
}
