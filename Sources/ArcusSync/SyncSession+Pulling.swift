import ArcusCRDT
import ArcusCodec
import ArcusStore

extension SyncSession {
    /// Announces one of this store's subscriptions to the peer (from the engine, any thread).
    nonisolated func announce(_ id: UInt64) {
        guard pulling else { return }
        Task { await self.announce(now: id) }
    }

    /// Withdraws a cancelled subscription.
    nonisolated func withdraw(_ id: UInt64) {
        Task { await self.withdrawNow(id) }
    }

    /// Tells the peer what this store wants and what it has of it. When the peer was told the
    /// same knowledge before, a digest stands for it (the peer asks again if it forgot).
    func announce(now id: UInt64, whole: Bool = false) {
        guard pulling, peerID != nil, let subscription = engine.subscription(id), subscription.active else { return }
        let claim = subscription.claim(site: store.site, localTime: store.version[store.site])
        let toldKey = SyncRecords.toldKey(peer: peerKey, id)
        let told = (try? store.syncRecord(toldKey)) ?? nil
        if !whole, let told, told == claim.digest {
            send(.summary(Summary(subscriptionID: id, version: VersionVector(), digest: told)))
        } else {
            if whole || told == nil {
                send(.subscribe(Subscribe(subscriptionID: id, query: subscription.query.text, arguments: .object(subscription.query.arguments))))
            }
            send(.summary(Summary(subscriptionID: id, version: claim)))
        }
        peerKnowsOfMine[id] = claim
        announced[id] = false
    }

    /// The peer now knows `claim` ∪ `covers` of this subscription (it remembers that much):
    /// record its digest, so the next session can say it in eight bytes.
    private func recordTold(_ id: UInt64, covers: VersionVector) {
        guard var told = peerKnowsOfMine[id] else { return }
        told.formUnion(covers)
        peerKnowsOfMine[id] = told
        do {
            try store.setSyncRecord(SyncRecords.toldKey(peer: peerKey, id), told.digest)
        } catch {
            engine.options.log(.warning, "could not record what \(peerDescription) knows of subscription \(id): \(error)")
        }
    }

    func withdrawNow(_ id: UInt64) {
        guard announced.removeValue(forKey: id) != nil else { return }
        send(.unsubscribe(subscriptionID: id))
        caughtUpChanged()
    }

    /// Merges a batch for one of this store's subscriptions, acknowledges it, and remembers
    /// that the peer has what it sent (so it is not echoed back).
    func receivedBatch(_ batch: DeltaBatch) throws {
        guard announced[batch.subscriptionID] != nil else {
            // Cancelled meanwhile: what was in flight is dropped, not merged.
            guard engine.subscription(batch.subscriptionID) != nil else {
                throw SyncProtocolError("a delta batch for subscription \(batch.subscriptionID), which this side never announced")
            }
            return
        }
        statistics.documentsReceived += try engine.merge(batch, subscription: batch.subscriptionID)
        for delta in batch.documents { remember(delta.key, has: delta.state.version) }
        if let position = batch.position {
            send(.ack(Ack(position: position, subscriptionID: batch.subscriptionID)))
        }
        if let covers = batch.covers {
            announced[batch.subscriptionID] = true
            recordTold(batch.subscriptionID, covers: covers)
            caughtUpChanged()
        }
    }
}
