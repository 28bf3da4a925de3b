import ArcusCRDT
import ArcusMesh
import ArcusSync

/// How `GET /v1/subscriptions` and `GET /v1/status` show a subscription: its number and query,
/// and its sync with each connected peer — what arrived since this agent last told the peer
/// what it has, what the peer says is still to come, whether it is caught up.
enum SubscriptionDocument {
    /// `peers`: the peer ids, as `/v1/peers` shows them, of the sites the sync engine names.
    static func json(_ entry: SyncEngine.SubscriptionEntry, progress: [SubscriptionSyncProgress], peers: [String: PeerID]) -> Value {
        var object = AgentHTTPAPI.fields(entry)
        let mine = progress.filter { $0.subscriptionID == entry.id }
        object["sync"] = .array(mine.map { $0.json(peer: peers[$0.peerID]) })
        object["caught_up"] = .bool(!mine.isEmpty && mine.allSatisfy(\.caughtUp))
        return .object(object)
    }

    /// Every active subscription, with its progress, each peer named by its id as `/v1/peers`
    /// and `arcus peers` show it.
    static func all(_ agent: Agent) -> Value {
        let progress = agent.engine.syncProgress
        var peers: [String: PeerID] = [:]
        for id in agent.presence.graph.peers.keys { peers[SyncedWait.siteKey(SiteID(peer: id))] = id }
        return .array(agent.engine.subscriptionEntries.map { json($0, progress: progress, peers: peers) })
    }
}

extension SubscriptionSyncProgress {
    /// `peer`: the peer's id, when the presence graph knows the site; else the site stands in.
    func json(peer: PeerID?) -> Value {
        .object([
            "peer": .string(peer?.description ?? peerID), "site": .string(peerID), "label": .string(self.peer), "caught_up": .bool(caughtUp),
            "documents_received": .int(Int64(documentsReceived)), "bytes_received": .int(Int64(bytesReceived)),
            "documents_to_go": backlog.map { .int(Int64(clamping: $0.documents)) } ?? .null,
            "bytes_to_go": backlog.map { .int(Int64(clamping: $0.bytes)) } ?? .null,
            "fraction": fraction.map { .double(($0 * 1000).rounded() / 1000) } ?? .null,
            "started_at": .double(startedAt),
        ])
    }
}
