import ArcusCRDT
import ArcusCodec
import ArcusStore

/// One of the peer's subscriptions, as this side serves it.
struct ServedSubscription {
    let id: UInt64
    let query: SubscriptionQuery
    /// What the peer said it has of the query's documents (its last summary).
    var peerKnows = VersionVector()
    /// Whether a summary arrived: nothing is sent before it.
    var summarised = false
    /// Whether the summary still waits for its answer (at least one batch, maybe empty).
    var owesReply = false
    /// The change-log position the peer acknowledged: everything matching up to it is there.
    var acknowledged: Int64 = 0
    /// Everything matching up to here was sent (in order: the backfill).
    var cursor: Int64 = 0
    /// Where the backfill that began with the summary ends; changes after it are live.
    var backfillEnd: Int64 = 0
    /// Live changes are sent ahead of the backfill; they were sent up to here.
    var liveCursor: Int64 = 0

    var isBackfilling: Bool { cursor < backfillEnd }

    var record: [UInt8] {
        SyncRecords.encode(.object([
            "query": .string(query.text), "arguments": .object(query.arguments),
            "acknowledged": .int(acknowledged), "knows": SyncRecords.version(peerKnows),
        ]))
    }

    init(id: UInt64, query: SubscriptionQuery) {
        self.id = id
        self.query = query
    }

    init?(id: UInt64, record: [UInt8]) {
        guard let fields = SyncRecords.decode(record), case .string(let text)? = fields["query"],
            case .object(let arguments)? = fields["arguments"] ?? .object([:]),
            let query = try? SubscriptionQuery(text, arguments: arguments)
        else { return nil }
        self.init(id: id, query: query)
        if case .int(let position)? = fields["acknowledged"] { acknowledged = position }
        peerKnows = SyncRecords.version(fields["knows"])
    }
}

extension SyncSession {
    func receivedSubscribe(_ subscribe: Subscribe) {
        let query: SubscriptionQuery
        do {
            guard case .object(let arguments) = subscribe.arguments else {
                throw SyncProtocolError("subscription arguments must be an object")
            }
            query = try SubscriptionQuery(subscribe.query, arguments: arguments)
        } catch {
            send(.error(SyncError(code: SyncErrorCode.badSubscription.rawValue, message: "\(subscribe.query): \(error)")))
            return
        }
        var subscription = ServedSubscription(id: subscribe.subscriptionID, query: query)
        // The same query under the same id resumes from what the peer acknowledged before.
        if let known = servedRecord(subscribe.subscriptionID), known.query == query {
            subscription.acknowledged = known.acknowledged
            subscription.peerKnows = known.peerKnows
        }
        served[subscription.id] = subscription
        persist(subscription)
    }

    func receivedUnsubscribe(_ id: UInt64) {
        served[id] = nil
        do {
            try store.setSyncRecord(SyncRecords.servedKey(peer: peerKey, id), nil)
        } catch {
            engine.options.log(.warning, "could not forget \(peerDescription)'s subscription \(id): \(error)")
        }
    }

    func receivedSummary(_ summary: Summary) throws {
        var subscription: ServedSubscription
        if let current = served[summary.subscriptionID] {
            subscription = current
        } else if let remembered = servedRecord(summary.subscriptionID) {
            subscription = remembered
        } else {
            send(.error(SyncError(code: SyncErrorCode.unknownSubscription.rawValue, message: String(summary.subscriptionID))))
            return
        }
        if summary.version.isEmpty, summary.digest.count == 8 {
            // "What I told you last time": usable only if it is what this side remembers.
            guard subscription.peerKnows.digest == summary.digest else {
                send(.error(SyncError(code: SyncErrorCode.needSummary.rawValue, message: String(summary.subscriptionID))))
                return
            }
        } else {
            subscription.peerKnows = summary.version
            persist(subscription)
        }
        subscription.summarised = true
        subscription.owesReply = true
        subscription.cursor = subscription.acknowledged
        subscription.backfillEnd = store.changeSequence
        subscription.liveCursor = subscription.backfillEnd
        served[subscription.id] = subscription
        ring()
    }

    func receivedAck(_ ack: Ack) {
        guard var subscription = served[ack.subscriptionID], Int64(clamping: ack.position) > subscription.acknowledged else { return }
        // A position this side never sent would skip changes on the next session: ignore it.
        guard Int64(clamping: ack.position) <= max(subscription.cursor, subscription.liveCursor) else { return }
        subscription.acknowledged = Int64(clamping: ack.position)
        served[ack.subscriptionID] = subscription
        persist(subscription)
    }

    private func servedRecord(_ id: UInt64) -> ServedSubscription? {
        guard let bytes = try? store.syncRecord(SyncRecords.servedKey(peer: peerKey, id)) else { return nil }
        return ServedSubscription(id: id, record: bytes)
    }

    func persist(_ subscription: ServedSubscription) {
        do {
            try store.setSyncRecord(SyncRecords.servedKey(peer: peerKey, subscription.id), subscription.record)
        } catch {
            engine.options.log(.warning, "could not record \(peerDescription)'s progress on \(subscription.query): \(error)")
        }
    }

    // MARK: - Producing batches

    /// The next batch for some subscription: with `live`, changes made since its backfill
    /// began (they go first); otherwise the backfill, or changes once it is done.
    func nextBatch(live: Bool) throws -> DeltaBatch? {
        for id in served.keys.sorted() {
            guard var subscription = served[id], subscription.summarised else { continue }
            let batch = live ? try liveBatch(&subscription) : try orderedBatch(&subscription)
            served[id] = subscription
            if let batch { return batch }
        }
        return nil
    }

    /// Changes after the backfill's end, sent while the backfill is still running. Not
    /// acknowledged (they are not a prefix of the log); the backfill's end takes them in.
    private func liveBatch(_ subscription: inout ServedSubscription) throws -> DeltaBatch? {
        guard subscription.isBackfilling, store.changeSequence > subscription.liveCursor else { return nil }
        while true {
            let changed = try store.changedDocuments(after: subscription.liveCursor, limit: engine.options.batchSize)
            subscription.liveCursor = changed.position
            let documents = deltas(changed.documents, for: subscription)
            if !documents.isEmpty {
                return DeltaBatch(documents: documents, subscriptionID: subscription.id)
            }
            if changed.isComplete { return nil }
        }
    }

    /// The backfill from the acknowledged position, then every change in log order, with a
    /// position to acknowledge and, once complete, what this side vouches for.
    private func orderedBatch(_ subscription: inout ServedSubscription) throws -> DeltaBatch? {
        let logEnd = store.changeSequence
        guard subscription.owesReply || subscription.cursor < logEnd else { return nil }
        while true {
            // Read before the documents: it names nothing they lack.
            let claim = engine.claim(for: subscription.query)
            let backfilling = subscription.isBackfilling
            var changed = try store.changedDocuments(after: subscription.cursor, limit: engine.options.batchSize)
            var complete = changed.isComplete
            if backfilling {
                // Changes past the backfill's end went (or will go) as live batches.
                let end = subscription.backfillEnd
                if changed.position >= end {
                    changed.documents.removeAll { $0.sequence > end }
                    subscription.cursor = max(end, subscription.liveCursor)
                    complete = subscription.liveCursor >= logEnd && changed.isComplete
                } else {
                    subscription.cursor = changed.position
                    complete = false
                }
            } else {
                subscription.cursor = changed.position
            }
            let documents = deltas(changed.documents, for: subscription)
            let reply = subscription.owesReply && complete
            guard !documents.isEmpty || reply else {
                if complete || subscription.cursor >= logEnd { return nil }
                continue
            }
            if complete {
                subscription.owesReply = false
                if let claim, !claim.isCovered(by: subscription.peerKnows) {
                    subscription.peerKnows.formUnion(claim)
                    persist(subscription)
                }
            }
            // A complete answer always carries `covers`, empty when this side vouches for nothing
            // (it subscribes to nothing that contains the query): it tells the peer it is caught up.
            return DeltaBatch(documents: documents, covers: complete ? (claim ?? VersionVector()) : nil,
                              position: UInt64(subscription.cursor),
                              subscriptionID: subscription.id)
        }
    }

    /// What the peer lacks of each document it should get, in key order: the events it does
    /// not have — or, for a document it probably does not have at all (one that matches now
    /// but did not as of what the peer knows), the whole state.
    private func deltas(_ documents: [LoggedDocument], for subscription: ServedSubscription) -> [DocumentDelta] {
        var result: [DocumentDelta] = []
        for document in documents {
            let value = document.value
            if let value {
                guard subscription.query.matches(collection: document.key.collection, value: value) else { continue }
            } else {
                // A removal carries no data; it goes to every subscriber of the collection, so
                // no copy of the document anywhere outlives it.
                guard subscription.query.collection == nil || subscription.query.collection == document.key.collection else { continue }
            }
            var known = subscription.peerKnows
            if let had = peerHas[document.key] { known.formUnion(had) }
            guard var delta = document.state.changes(since: known) else { continue }
            if value != nil, !document.state.version.intersection(known).isEmpty {
                let before = document.state.restricted(to: known).document(id: document.key.id)
                if !(before.map { subscription.query.matches(collection: document.key.collection, value: $0) } ?? false) {
                    delta = document.state
                }
            }
            remember(document.key, has: document.state.version)
            result.append(DocumentDelta(key: document.key, state: delta))
        }
        statistics.documentsSent += result.count
        result.sort { $0.key < $1.key }
        return result
    }

    /// Records that the peer has these events of the document (bounded: forgetting only
    /// costs a resend).
    func remember(_ key: DocumentKey, has version: VersionVector) {
        if peerHas.count >= engine.options.sessionMemory, peerHas[key] == nil { peerHas.removeAll(keepingCapacity: true) }
        peerHas[key, default: VersionVector()].formUnion(version)
    }
}
