import ArcusCRDT
import ArcusCodec
import ArcusStore

/// Reaped tombstones between two peers (Docs/Sync.md "Reaped tombstones"). A store that reaps
/// a removed document's tombstone raises its reaped horizon for the collection
/// (`Store.reapTombstones`); a peer away since, still holding the document, learns of it here:
///
/// - the server, when a summary for a whole collection does not cover its horizon there, sends
///   the horizon (`ReapedHorizon`, a notice);
/// - the subscriber, once the answer to that summary is complete (it then holds every document
///   the server holds), asks about the documents it holds with events under the horizon, a
///   chunk at a time (`ReapCheck`);
/// - the server answers with the events it holds of each (none for those it reaped);
/// - the subscriber drops the cells under the horizon the server lacks (`Store.purge`), as the
///   reaped tombstones would have, and takes the horizon as its own, so old copies from a third
///   peer stay dropped too.
///
/// A peer purges only on the word of one that may write the collection: a removal needs that
/// right, and so does its effect.
extension SyncSession {
    /// Server: after a summary of a whole collection, the horizon, if the peer's claim lacks it.
    func noticeReapedHorizon(_ subscription: ServedSubscription) {
        guard peerReadsReapedHorizons, let collection = subscription.query.collection, subscription.query.matchesAll(of: collection),
              permissions.mayReadAll(of: subscription.query) else { return }
        let horizon = store.reapedHorizon(of: collection)
        guard !horizon.isEmpty, !horizon.isCovered(by: subscription.peerKnows) else { return }
        send(.reapedHorizon(ReapedHorizon(subscriptionID: subscription.id, horizon: horizon)))
    }

    /// Server: which of the documents asked about this store holds, and with which events.
    func receivedReapCheck(_ check: ReapCheck) throws {
        guard let subscription = served[check.subscriptionID], let collection = subscription.query.collection,
              subscription.query.matchesAll(of: collection) else {
            throw SyncProtocolError("a reap check for subscription \(check.subscriptionID), which is not a whole collection this side serves")
        }
        guard check.keys.allSatisfy({ $0.collection == collection }) else {
            throw SyncProtocolError("a reap check for subscription \(check.subscriptionID) names documents outside \(collection)")
        }
        guard permissions.read.contains(collection) else { return }
        let horizon = store.reapedHorizon(of: collection)
        let (held, unknown) = try store.heldEvents(of: check.keys, under: horizon)
        send(.reapedHorizon(ReapedHorizon(
            subscriptionID: check.subscriptionID, horizon: horizon,
            held: held.map { HeldEvents(key: $0.key, events: $0.value) }.sorted { $0.key < $1.key }, unknown: unknown, answersCheck: true
        )))
    }

    /// Subscriber: a notice starts a check once the subscription's answer is complete; an
    /// answer purges what the server reaped and asks about the next chunk.
    func receivedReapedHorizon(_ notice: ReapedHorizon) throws {
        let id = notice.subscriptionID
        guard let query = engine.subscription(id)?.query, let collection = query.collection, query.matchesAll(of: collection) else { return }
        guard permissions.write.contains(collection) else {
            engine.options.log(.warning, "\(peerDescription) says it reaped removed documents of \(collection), which it may not write: ignored")
            return
        }
        guard notice.answersCheck else {
            if announced[id] == true, (unanswered[id] ?? 0) == 0 {
                try startReapCheck(id, collection: collection, horizon: notice.horizon)
            } else {
                pendingReapNotices[id] = notice.horizon
            }
            return
        }
        guard var check = reapChecks[id] else { return }
        // Only what was asked, and only under the horizon the check began with: an answer says
        // nothing of other documents or events.
        let asked = Set(check.asked).subtracting(notice.unknown)
        var held: [DocumentKey: Set<Stamp>] = [:]
        for answer in notice.held where asked.contains(answer.key) { held[answer.key] = Set(answer.events) }
        // The horizon becomes this store's with the last chunk: a session that ends before it
        // leaves the check to be made again from the start.
        let purged = try store.purge(held, under: check.horizon, collection: collection, raising: check.remaining.isEmpty)
        if purged > 0 {
            engine.options.log(.info, "\(purged) document(s) of \(collection) removed on \(peerDescription) while this store was away, their tombstones since reaped, are gone here too")
        }
        check.purged += purged
        guard !check.remaining.isEmpty else {
            reapChecks[id] = nil
            return
        }
        check.asked = Array(check.remaining.prefix(ReapedHorizon.maximumDocuments))
        check.remaining.removeFirst(check.asked.count)
        reapChecks[id] = check
        send(.reapCheck(ReapCheck(subscriptionID: id, keys: check.asked)))
    }

    /// Subscriber: the subscription's answer is complete; a notice that waited for it starts.
    func reapAfterCatchingUp(_ id: UInt64) throws {
        guard let horizon = pendingReapNotices.removeValue(forKey: id),
              let query = engine.subscription(id)?.query, let collection = query.collection else { return }
        try startReapCheck(id, collection: collection, horizon: horizon)
    }

    private func startReapCheck(_ id: UInt64, collection: String, horizon: VersionVector) throws {
        guard reapChecks[id] == nil else { return }
        var keys = try store.keys(in: collection, withEventsUnder: horizon)
        guard !keys.isEmpty else {
            // Nothing here the server may have reaped: its horizon is this store's now.
            try store.purge([:], under: horizon, collection: collection)
            return
        }
        let asked = Array(keys.prefix(ReapedHorizon.maximumDocuments))
        keys.removeFirst(asked.count)
        reapChecks[id] = ReapCheckProgress(horizon: horizon, asked: asked, remaining: keys)
        send(.reapCheck(ReapCheck(subscriptionID: id, keys: asked)))
    }
}

/// A subscriber's check against a server's reaped horizon, a chunk at a time.
struct ReapCheckProgress {
    let horizon: VersionVector
    /// The chunk asked about, awaiting its answer.
    var asked: [DocumentKey]
    var remaining: [DocumentKey]
    var purged = 0
}
