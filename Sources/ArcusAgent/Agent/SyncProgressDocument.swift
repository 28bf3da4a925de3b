import ArcusCRDT
import ArcusSync

/// How `GET /v1/subscriptions` and `GET /v1/status` show a subscription: its number and query,
/// and its sync with each connected peer — what arrived since this agent last told the peer
/// what it has, what the peer says is still to come, whether it is caught up.
enum SubscriptionDocument {
    static func json(_ entry: SyncEngine.SubscriptionEntry, progress: [SubscriptionSyncProgress]) -> Value {
        var object = AgentHTTPAPI.fields(entry)
        let mine = progress.filter { $0.subscriptionID == entry.id }
        object["sync"] = .array(mine.map(\.json))
        object["caught_up"] = .bool(!mine.isEmpty && mine.allSatisfy(\.caughtUp))
        return .object(object)
    }

    /// Every active subscription, with its progress.
    static func all(_ engine: SyncEngine) -> Value {
        let progress = engine.syncProgress
        return .array(engine.subscriptionEntries.map { json($0, progress: progress) })
    }
}

extension SubscriptionSyncProgress {
    var json: Value {
        .object([
            "peer": .string(peerID), "label": .string(peer), "caught_up": .bool(caughtUp),
            "documents_received": .int(Int64(documentsReceived)), "bytes_received": .int(Int64(bytesReceived)),
            "documents_to_go": backlog.map { .int(Int64(clamping: $0.documents)) } ?? .null,
            "bytes_to_go": backlog.map { .int(Int64(clamping: $0.bytes)) } ?? .null,
            "fraction": fraction.map { .double(($0 * 1000).rounded() / 1000) } ?? .null,
            "started_at": .double(startedAt),
        ])
    }
}
