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

    /// Tells the peer what this store wants and what it has of it. When the peer was told some
    /// of that knowledge before, an 8-byte digest stands for it, followed by the entries that
    /// are newer (none when nothing changed; the peer asks for it all if it forgot). Documents
    /// evicted while the subscription matched them are named before the summary, so the peer
    /// sends them whole.
    ///
    /// Of its own writes the summary claims no more than the peer was told before: a server
    /// never sends a peer the events it made itself (it knows the peer's site from its hello),
    /// so a summary stays a digest while only this store's own writes changed.
    func announce(now id: UInt64, whole: Bool = false) {
        guard pulling, peerID != nil, let subscription = engine.subscription(id), subscription.active else { return }
        let toldKey = SyncRecords.toldKey(peer: peerKey, id)
        let told = ((try? store.syncRecord(toldKey)) ?? nil).flatMap(SyncRecords.told)
        let missing = subscription.missing.keys.sorted()
        // After commits may have been lost (a power cut under durability normal), claim no own
        // event past those the store held at open, and say nothing of this peer's changes was
        // merged, until the peer has answered once: it sends back what was lost of either. After
        // an eviction took own events for good, the claim already stops below them (`ownFloor`):
        // position 0 alone tells the peer to send them.
        let recovering = engine.asksForOwnEvents(from: peerKey, id)
        var localTime = store.version[store.site]
        if recovering, store.mayHaveLostCommits { localTime = localTime.map { time in store.ownTimeAtOpen.map { min($0, time) } ?? .zero } }
        var claim = subscription.claim(site: store.site, ownTime: localTime)
        if let told {
            let capped = subscription.claim(site: store.site, ownTime: told[store.site].flatMap { known in localTime.map { min($0, known) } })
            if told.isCovered(by: capped) { claim = capped }
        }
        // Where this store's merges of the peer's batches got to, as its own store says.
        let position = recovering ? 0 : SyncRecords.position((try? store.syncRecord(SyncRecords.ackedKey(peer: peerKey, id))) ?? nil)
        if !whole, missing.isEmpty, let told, told.isCovered(by: claim) {
            send(.summary(Summary(subscriptionID: id, version: claim.subtracting(told), digest: told.digest, position: position)))
        } else {
            if whole || told == nil {
                send(.subscribe(Subscribe(subscriptionID: id, query: subscription.query.text, arguments: .object(subscription.query.arguments))))
            }
            if !missing.isEmpty { send(.missing(MissingDocuments(subscriptionID: id, keys: missing))) }
            send(.summary(Summary(subscriptionID: id, version: claim, position: position)))
        }
        peerKnowsOfMine[id] = claim
        engine.progress.started(id, session: ObjectIdentifier(self), peerID: peerKey, peer: peerDescription)
        announced[id] = false
        unanswered[id, default: 0] += 1
        listedMissing[id] = Set(missing)
        receivedListed[id] = [:]
        announcedAfter[id] = subscription.evictions
    }

    /// The peer now knows `claim` ∪ `covers` of this subscription (it remembers that much):
    /// record it, so the next session can say it in eight bytes.
    private func recordTold(_ id: UInt64, covers: VersionVector) {
        guard var told = peerKnowsOfMine[id] else { return }
        told.formUnion(covers)
        peerKnowsOfMine[id] = told
        do {
            try store.setSyncRecord(SyncRecords.toldKey(peer: peerKey, id), SyncRecords.told(told))
        } catch {
            engine.options.log(.warning, "could not record what \(peerDescription) knows of subscription \(id): \(error)")
        }
    }

    func withdrawNow(_ id: UInt64) {
        // Announcing and withdrawing run as tasks, which may start out of order: act on what the
        // subscription is now (subscribed again meanwhile: nothing to withdraw).
        guard engine.subscription(id)?.active != true, announced.removeValue(forKey: id) != nil else { return }
        unanswered[id] = nil
        listedMissing[id] = nil
        engine.progress.withdrawn(id, session: ObjectIdentifier(self))
        send(.unsubscribe(subscriptionID: id))
        caughtUpChanged()
    }

    /// Documents asked for by key that are still missing after the answer (the peer lacked
    /// them, or some of their events): ask again after a while, backing off, since this peer
    /// may get them meanwhile.
    private func askAgainLater(_ id: UInt64, for listed: Set<DocumentKey>) {
        guard let missing = engine.subscription(id)?.missing, listed.contains(where: { missing[$0] != nil }) else {
            askAgainDelay[id] = nil
            return
        }
        let delay = askAgainDelay[id] ?? 0.25
        askAgainDelay[id] = min(delay * 2, 8)
        Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(Int(delay * 1000)))
            await self?.announce(now: id)
        }
    }

    /// The peer refused a summary (it did not know the subscription, or not the digest): that
    /// summary gets no other answer.
    func summaryRefused(_ id: UInt64) {
        if let owed = unanswered[id], owed > 0 { unanswered[id] = owed - 1 }
    }

    /// Acknowledgements wait this long for more batches to take in with them: one ack for a
    /// stream of live batches, and none for a sync that ends at once (the next summary carries
    /// the position, recorded with the merge, instead).
    static let acknowledgementDelay = Duration.milliseconds(25)

    private func acknowledgeSoon(_ position: UInt64, subscription id: UInt64) {
        pendingAcks[id] = max(pendingAcks[id] ?? 0, position)
        guard !ackScheduled else { return }
        ackScheduled = true
        Task { [weak self] in
            try? await Task.sleep(for: Self.acknowledgementDelay)
            await self?.sendPendingAcks()
        }
    }

    private func sendPendingAcks() {
        ackScheduled = false
        guard endReason == nil else { return }
        for (id, position) in pendingAcks.sorted(by: { $0.key < $1.key }) where announced[id] != nil {
            send(.ack(Ack(position: position, subscriptionID: id)))
        }
        pendingAcks.removeAll()
    }

    /// Merges a batch for one of this store's subscriptions, acknowledges it, and remembers
    /// that the peer has what it sent (so it is not echoed back).
    func receivedBatch(_ batch: DeltaBatch) throws {
        let id = batch.subscriptionID
        guard announced[id] != nil, let subscription = engine.subscription(id) else {
            // Cancelled meanwhile: what was in flight is dropped, not merged (nor acknowledged,
            // so it is sent again if the subscription comes back).
            guard engine.subscription(id) != nil else {
                throw SyncProtocolError("a delta batch for subscription \(id), which this side never announced")
            }
            return
        }
        if let collection = subscription.query.collection, let stray = batch.documents.first(where: { $0.key.collection != collection }) {
            throw SyncProtocolError("""
                a delta batch for subscription \(id) (\(subscription.query)) carries \(stray.key), a document of a collection it \
                does not ask for
                """)
        }
        if batch.answers > 0 {
            let owed = unanswered[id] ?? 0
            guard batch.answers <= UInt64(owed) else {
                throw SyncProtocolError("a delta batch answers \(batch.answers) summaries of subscription \(id), but \(owed) await an answer")
            }
        }
        let admission = admit(batch)
        let batch = admission.batch
        report(admission.refusals)
        // Produced before the peer took in this side's latest summary (the batch does not
        // complete its answer), or the summary itself predates an eviction.
        let stale = (unanswered[id] ?? 0) > Int(batch.answers) || (announcedAfter[id] ?? 0) < subscription.evictions
        let merged = try engine.merge(batch, subscription: id, from: peerKey, stale: stale, sayingWhatItSaw: peerSaysWhatItSaw)
        statistics.documentsReceived += merged.changed
        if let echoes = merged.echoes { passEchoes(echoes) }
        if !merged.changedDocuments.isEmpty {
            engine.merged(merged.changedDocuments.map { DocumentVersion(key: $0.key, version: $0.state.version) }, apart: self)
        }
        pushAfterMerging(batch, changed: merged.changed, subscription: id)
        engine.progress.received(batch, bytes: frameBytes, session: ObjectIdentifier(self))
        for delta in batch.documents { remember(delta.key, has: delta.state.version) }
        // (Refused documents are not remembered either: what the peer has of them stays unknown.)
        if let listed = listedMissing[id], !listed.isEmpty {
            for delta in batch.documents where listed.contains(delta.key) {
                receivedListed[id, default: [:]][delta.key, default: VersionVector()].formUnion(delta.state.version)
            }
        }
        if let position = batch.position { acknowledgeSoon(position, subscription: id) }
        if let covers = merged.covers { recordTold(id, covers: covers) }
        guard batch.answers > 0 else { return }
        let owed = (unanswered[id] ?? 0) - Int(batch.answers)
        unanswered[id] = owed
        guard owed == 0 else { return }
        // The latest summary is answered: this side has what the peer had as of then, the
        // documents it asked for by key included; and the peer has taken in the summary.
        if batch.covers == nil { recordTold(id, covers: VersionVector()) }
        engine.ownEventsAnswered(from: peerKey, id)
        // Unless something was evicted since that summary went: what the peer sent back may
        // predate it, and the summary about to follow asks again.
        if let listed = listedMissing.removeValue(forKey: id), !listed.isEmpty,
           (engine.subscription(id)?.evictions ?? 0) <= (announcedAfter[id] ?? 0) {
            engine.recovered(id, keys: listed, vouched: batch.covers, received: receivedListed[id] ?? [:])
            askAgainLater(id, for: listed)
        }
        announced[id] = true
        engine.progress.caughtUp(id, session: ObjectIdentifier(self))
        caughtUpChanged()
        try reapAfterCatchingUp(id)
    }
}
