import ArcusCRDT
import ArcusMesh
import ArcusStore
import ArcusSync
import Foundation

/// The agent's `system:` collections, read with SELECT like any other (the store adds
/// `system:collections` and `system:indexes`):
///
/// - `system:data_sync_info`: a row per peer known, with whether a sync session with it runs,
///   the last commit of this agent it has acknowledged (`synced_up_to_local_commit_id`, what
///   `--wait-synced` compares with) and when it last sent documents.
/// - `system:system_info`: one row: who and what this agent is, for how long it has run, and
///   how many documents each collection holds.
/// - `system:peers`: the presence graph's peers as rows.
enum SystemCollections {
    static func register(for agent: Agent) {
        let store = agent.store
        // Each runs inside the SELECT's read: it must not use the store but through `reading`.
        store.registerVirtualCollection("system:data_sync_info") { [weak agent] reading in try agent.map { try dataSyncInfo($0, reading) } ?? [] }
        store.registerVirtualCollection("system:system_info") { [weak agent] reading in try agent.map { [try systemInfo($0, reading)] } ?? [] }
        store.registerVirtualCollection("system:peers") { [weak agent] _ in agent.map(peers) ?? [] }
    }

    static func dataSyncInfo(_ agent: Agent, _ reading: VirtualCollectionReading) throws -> [Value] {
        let graph = agent.presence.graph
        let connected = agent.syncedPeers.withLock { $0 }
        return try graph.peers.values.filter { $0.id != agent.identity.peerID }.sorted { $0.id < $1.id }.map { peer in
            let key = SyncedWait.siteKey(SiteID(peer: peer.id))
            let records = try reading.syncRecords(prefix: SyncEngine.servedRecordPrefix(key))
            let acknowledged = agent.engine.acknowledgements(of: key, records: records).map(\.position).max()
            return .object([
                "_id": .string(peer.id.description), "name": peer.name.map(Value.string) ?? .null,
                "sync_session_status": .string(connected.contains(peer.id) ? "connected" : "not_connected"),
                "synced_up_to_local_commit_id": acknowledged.map(Value.int) ?? .null,
                "last_update_received_time": agent.engine.lastReceived(from: key).map { .double(($0 * 1000).rounded() / 1000) } ?? .null,
            ])
        }
    }

    static func systemInfo(_ agent: Agent, _ reading: VirtualCollectionReading) throws -> Value {
        let counts = try reading.documentCounts()
        return .object([
            "_id": .string(agent.identity.peerID.description), "name": .string(agent.configuration.name),
            "data": .string(agent.configuration.dataDirectory), "durability": agent.settings.value(.durability),
            "transports": .array(agent.transportStarts.running.map { .string($0) }),
            "uptime_seconds": .double(((ContinuousClock.now - agent.startedAt).inSeconds * 1000).rounded() / 1000),
            "latest_commit_id": .int(agent.store.changeSequence),
            "documents": .object(counts.mapValues { .int(Int64($0)) }),
        ])
    }

    static func peers(_ agent: Agent) -> [Value] {
        guard case .object(let graph) = PeersDocument(graph: agent.presence.graph, local: agent.identity.peerID).json,
              case .array(let peers)? = graph["peers"] else { return [] }
        return peers.map { peer in
            guard case .object(var fields) = peer else { return peer }
            fields["_id"] = fields.removeValue(forKey: "id")
            return .object(fields)
        }
    }
}
