import ArcusCRDT
import ArcusCodec
import ArcusStore

/// One of the peer's subscriptions, as this side serves it.
struct ServedSubscription {
    let id: UInt64
    let query: SubscriptionQuery
    /// What the peer has of the query's documents as far as this session knows: its last
    /// summary and what this side vouched for since (frames arrive in order, so it has those).
    var peerKnows = VersionVector()
    /// What the peer is known to have kept: its last summary and the claims it acknowledged.
    /// Persisted. A later summary that knows less means the peer lost data.
    var confirmedKnows = VersionVector()
    /// Whether a summary arrived: nothing is sent before it.
    var summarised = false
    /// Summaries that still wait for their answer (one batch completes them all).
    var owedReplies = 0
    /// Documents the peer evicted and asked for by key: sent whole, before the backfill.
    var resend: Set<DocumentKey> = []
    /// Whether the peer's latest summary said its store may have lost commits (position 0):
    /// its own events then count as known only as far as it claims them, so those it lost
    /// come back from here.
    var peerLostCommits = false
    /// Whether the next answer says what this side vouches for even when the peer knew it
    /// (the peer needs it to tell what of its missing documents it got back).
    var vouchInReply = false
    /// Where the next backfill starts: everything matching up to here is at the peer (it
    /// acknowledged it, or this side passed it with nothing to send and nothing unacknowledged).
    var acknowledged: Int64 = 0
    /// The highest position the peer acknowledged itself. A summary that says the peer merged
    /// less means it lost what it had.
    var confirmed: Int64 = 0
    /// Whether the record changed (`acknowledged` moved without an acknowledgement, claims
    /// went unconfirmed) and is not yet persisted.
    var unsaved = false
    /// The highest position sent in a batch (an acknowledgement beyond it is bogus).
    var positionSent: Int64 = 0
    /// The highest change-log position of a document sent: until the peer acknowledges it,
    /// `acknowledged` only moves with its acknowledgements.
    var sentThrough: Int64 = 0
    /// Claims sent with a position, until the peer acknowledges that position.
    var unconfirmed: [(position: Int64, covers: VersionVector)] = []
    /// Claims an earlier session sent that were never acknowledged (acks are delayed, and a
    /// link may close first): the position in the peer's next summary confirms those it merged.
    var earlierClaims: [(position: Int64, covers: VersionVector)] = []
    /// Everything matching up to here was sent (in order: the backfill).
    var cursor: Int64 = 0
    /// Where the backfill that began with the summary ends; changes after it are live.
    var backfillEnd: Int64 = 0
    /// Live changes are sent ahead of the backfill; they were sent up to here.
    var liveCursor: Int64 = 0
    /// What the backfill has still to go through, told the peer with each batch; nil when the
    /// peer does not read backlogs, or no backfill is under way.
    var backlog: BacklogEstimate?
    /// Whether the peer asked for its live changes lazily (`PushNote`): once the backfill is
    /// done, they are held `SyncEngine.Options.lazyPushHold`, then sent only if still missing.
    var lazy = false
    /// When the changes held now began to be held, and the log position they end at.
    var holdStarted: ContinuousClock.Instant?
    var holdEnd: Int64 = 0

    /// The collections the peer could read when this side served it (persisted): when it may
    /// read more now, what was withheld lies behind `acknowledged`, and the log is read again.
    var servedRead = SyncPermissions.Collections.all
    /// Whether the record was loaded for a peer that may read more now: the next summary
    /// restarts the backfill from the start, whatever position it says.
    var widened = false

    var isBackfilling: Bool { cursor < backfillEnd }

    /// Forgets what the peer acknowledged past `position`: the next backfill starts there.
    mutating func restart(at position: Int64) {
        acknowledged = position
        confirmed = position
        sentThrough = min(sentThrough, position)
        unconfirmed.removeAll()
        earlierClaims.removeAll()
    }

    /// Nothing sent waits for an acknowledgement.
    var isSettled: Bool { sentThrough <= acknowledged && unconfirmed.isEmpty }

    var record: [UInt8] {
        SyncRecords.encode(.object([
            "query": .string(query.text), "arguments": .object(query.arguments),
            "acknowledged": .int(acknowledged), "confirmed": .int(confirmed), "knows": SyncRecords.version(confirmedKnows),
            "unconfirmed": .array((earlierClaims + unconfirmed).map { .array([.int($0.position), SyncRecords.version($0.covers)]) }),
            "read": .array(servedRead.names.map { .string($0) }),
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
        if case .int(let position)? = fields["acknowledged"] { acknowledged = max(0, position) }
        if case .int(let position)? = fields["confirmed"] { confirmed = min(max(0, position), acknowledged) }
        if case .array(let names)? = fields["read"] {
            servedRead = SyncPermissions.Collections(names.compactMap { if case .string(let name) = $0 { name } else { nil } })
        }
        confirmedKnows = SyncRecords.version(fields["knows"])
        peerKnows = confirmedKnows
        if case .array(let claims)? = fields["unconfirmed"] {
            for case .array(let pair) in claims.prefix(64) where pair.count == 2 {
                guard case .int(let position) = pair[0] else { continue }
                earlierClaims.append((position, SyncRecords.version(pair[1])))
            }
        }
    }

    /// Takes in the claims of earlier sessions that the peer merged (up to `position`, as it
    /// says in its summary), and forgets the others.
    mutating func confirmEarlierClaims(upTo position: Int64?) {
        guard !earlierClaims.isEmpty else { return }
        for claim in earlierClaims where position.map({ claim.position <= $0 }) ?? false {
            peerKnows.formUnion(claim.covers)
            confirmedKnows.formUnion(claim.covers)
        }
        earlierClaims.removeAll()
        unsaved = true
    }
}

extension SyncSession {
    /// Most documents a peer may ask for by key, per subscription, before they are sent: as many
    /// as a subscriber ever lists (`LocalSubscription.missingLimit`, one `missing` message).
    static let resendLimit = LocalSubscription.missingLimit

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
        if let collection = query.collection, !permissions.read.contains(collection) {
            // Refused, not served empty: an empty answer would tell the peer it has everything
            // there is. The error goes with each of its summaries (which always follow).
            engine.options.log(.warning, "\(peerDescription) may not read \(collection): its subscription \(query) is refused")
            refusedSubscriptions[subscribe.subscriptionID] = collection
            if let dropped = served.removeValue(forKey: subscribe.subscriptionID), dropped.unsaved { persist(dropped) }
            return
        }
        refusedSubscriptions[subscribe.subscriptionID] = nil
        // Said again (after an error, say): what this session knows of it stands.
        if let current = served[subscribe.subscriptionID], current.query == query { return }
        var subscription = ServedSubscription(id: subscribe.subscriptionID, query: query)
        subscription.servedRead = permissions.read
        // The same query under the same id resumes from what the peer acknowledged before.
        if let known = servedRecord(subscribe.subscriptionID), known.query == query {
            subscription = known
        }
        served[subscription.id] = subscription
        persist(subscription)
    }

    func receivedUnsubscribe(_ id: UInt64) {
        // The record stays: subscribing again to the same query resumes from it.
        refusedSubscriptions[id] = nil
        guard let subscription = served.removeValue(forKey: id) else { return }
        if subscription.unsaved { persist(subscription) }
        // The peer drops what was in flight for it: what this side remembers sending is wrong.
        peerHas.removeAll()
    }

    /// Documents the peer evicted: they go whole with the answer to the summary that follows.
    func receivedMissing(_ missing: MissingDocuments) throws {
        // Unknown: the summary that follows gets the error that makes the peer say it all again.
        guard refusedSubscriptions[missing.subscriptionID] == nil,
              var subscription = served[missing.subscriptionID] ?? servedRecord(missing.subscriptionID) else { return }
        // Only keys the subscription could send are kept: of its collection, and readable.
        let keys = missing.keys.filter { key in
            permissions.read.contains(key.collection) && (subscription.query.collection.map { $0 == key.collection } ?? true)
        }
        guard subscription.resend.count + keys.count <= Self.resendLimit || subscription.resend.union(keys).count <= Self.resendLimit else {
            throw SyncProtocolError("the peer asked for more than \(Self.resendLimit) documents of \(subscription.query) by key")
        }
        subscription.resend.formUnion(keys)
        subscription.vouchInReply = true
        for key in keys { peerHas[key] = nil }
        served[subscription.id] = subscription
    }

    func receivedSummary(_ summary: Summary) throws {
        var subscription: ServedSubscription
        if let collection = refusedSubscriptions[summary.subscriptionID] {
            refuseUnreadable(summary.subscriptionID, collection: collection)
            return
        } else if let current = served[summary.subscriptionID] {
            subscription = current
        } else if let remembered = servedRecord(summary.subscriptionID) {
            subscription = remembered
        } else {
            send(.error(SyncError(code: SyncErrorCode.unknownSubscription.rawValue, message: String(summary.subscriptionID))))
            return
        }
        // A subscription remembered from a session with wider permissions.
        if let collection = subscription.query.collection, !permissions.read.contains(collection) {
            engine.options.log(.warning, "\(peerDescription) may not read \(collection): its subscription \(subscription.query) is refused")
            refusedSubscriptions[subscription.id] = collection
            served[subscription.id] = nil
            refuseUnreadable(subscription.id, collection: collection)
            return
        }
        var restarted = subscription.widened
        subscription.widened = false
        subscription.confirmEarlierClaims(upTo: summary.position.map { Int64(clamping: $0) })
        subscription.peerLostCommits = summary.position == 0
        if summary.digest.count == 8 {
            // "What I told you last time, and these newer entries": usable only if it is what
            // this side remembers. The peer recorded it once it had merged what it names.
            guard subscription.peerKnows.digest == summary.digest else {
                send(.error(SyncError(code: SyncErrorCode.needSummary.rawValue, message: String(summary.subscriptionID))))
                return
            }
            subscription.peerKnows.formUnion(summary.version)
            subscription.confirmedKnows = subscription.peerKnows
        } else {
            if !subscription.confirmedKnows.isCovered(by: summary.version) {
                // The peer has less than it had (it evicted, or its store came back from an old
                // backup): what it acknowledged may be gone, so go through the whole log again,
                // sending only what this summary lacks.
                engine.options.log(.info, "\(peerDescription) knows less of \(subscription.query) than it did: sending it what it lacks from the start of the change log")
                subscription.restart(at: 0)
                peerHas.removeAll()
                engine.forgetCredentialsGiven(to: peerKey)
                restarted = true
            }
            subscription.peerKnows = summary.version
            subscription.confirmedKnows = summary.version
        }
        // Where the peer says its merges got to (what it acknowledged, as its store keeps it,
        // in the transaction of each merge): short of what it acknowledged, it lost some;
        // beyond, its last acknowledgements never arrived (they wait a little to be coalesced,
        // and a link may close first), so resume from there.
        if !restarted, let said = summary.position {
            let position = Int64(clamping: said)
            if position > store.changeSequence {
                // A position this log never reached: this store is not what the peer synced with
                // (it came back from a backup, say). Start over.
                engine.options.log(.info, "\(peerDescription) says it merged this store's changes up to \(position), past their end: sending it \(subscription.query) from the start")
                subscription.restart(at: 0)
                peerHas.removeAll()
                engine.forgetCredentialsGiven(to: peerKey)
            } else if subscription.peerLostCommits, position < subscription.acknowledged {
                // Passed over as the peer's own, or as nothing for it; but it may lack some of
                // its own writes (its last commits lost to a power cut under durability normal,
                // or writes an eviction took): go over them again, leaving out what its summary
                // claims.
                engine.options.log(.info, "\(peerDescription) may lack some of its own writes: going over \(subscription.query) again from the start, for what it lacks")
                subscription.restart(at: position)
                peerHas.removeAll()
                engine.forgetCredentialsGiven(to: peerKey)
            } else if position < subscription.confirmed {
                // The peer lost what it had acknowledged (its store came back from a backup):
                // resume from where its store really is.
                engine.options.log(.info, "\(peerDescription) has this store's changes to \(subscription.query) only up to \(position), not \(subscription.confirmed): resuming from there")
                subscription.restart(at: position)
                peerHas.removeAll()
                engine.forgetCredentialsGiven(to: peerKey)
            } else if position > subscription.acknowledged {
                subscription.acknowledged = position
                subscription.confirmed = position
            }
        }
        persist(subscription)
        subscription.summarised = true
        subscription.owedReplies += 1
        subscription.cursor = subscription.acknowledged
        // The backfill ends at a change that can be read: one still being written (or an
        // eviction, which leaves nothing to read) would hold it open.
        subscription.backfillEnd = max(subscription.acknowledged, (try? store.lastLoggedPosition()) ?? store.changeSequence)
        subscription.liveCursor = subscription.backfillEnd
        subscription.backlog = nil
        if peerReadsBacklog {
            do {
                subscription.backlog = try BacklogEstimate(store: store, after: subscription.cursor, through: subscription.backfillEnd,
                                                           collection: subscription.query.collection)
            } catch {
                engine.options.log(.warning, "could not count what \(peerDescription) lacks of \(subscription.query): its progress goes unreported: \(error)")
            }
        }
        served[subscription.id] = subscription
        noticeReapedHorizon(subscription)
        ring()
    }

    /// Tells the peer that a subscription of its asks for what it may not read.
    private func refuseUnreadable(_ id: UInt64, collection: String) {
        send(.error(SyncError(code: SyncErrorCode.notPermitted.rawValue,
                              message: "\(id) may not read collection \(collection) (it may read \(permissions.read))")))
    }

    func receivedAck(_ ack: Ack) {
        guard var subscription = served[ack.subscriptionID] else { return }
        // A position this side never sent would skip changes on the next session: ignore it.
        let position = Int64(clamping: ack.position)
        guard position >= subscription.acknowledged, position <= subscription.positionSent else { return }
        subscription.acknowledged = position
        subscription.confirmed = max(subscription.confirmed, position)
        while let first = subscription.unconfirmed.first, first.position <= position {
            subscription.confirmedKnows.formUnion(first.covers)
            subscription.unconfirmed.removeFirst()
        }
        // Nothing sent waits any more: what the cursor passed since was not for the peer (or it
        // had it), so the position moves on to the cursor.
        if subscription.isSettled, subscription.cursor > subscription.acknowledged, !subscription.isBackfilling {
            subscription.acknowledged = subscription.cursor
        }
        served[ack.subscriptionID] = subscription
        persist(subscription)
    }

    private func servedRecord(_ id: UInt64) -> ServedSubscription? {
        guard let bytes = try? store.syncRecord(SyncRecords.servedKey(peer: peerKey, id)),
              var subscription = ServedSubscription(id: id, record: bytes) else { return nil }
        if !permissions.read.isSubset(of: subscription.servedRead) {
            engine.options.log(.info, "\(peerDescription) may read more than when it was last served \(subscription.query): sending it what it lacks from the start of the change log")
            subscription.restart(at: 0)
            subscription.widened = true
        }
        subscription.servedRead = permissions.read
        return subscription
    }

    func persist(_ subscription: ServedSubscription) {
        reportAcknowledged(subscription)
        do {
            try store.setSyncRecord(SyncRecords.servedKey(peer: peerKey, subscription.id), subscription.record)
            served[subscription.id]?.unsaved = false
        } catch {
            engine.options.log(.warning, "could not record \(peerDescription)'s progress on \(subscription.query): \(error)")
        }
    }

    /// Tells the engine how far the peer has acknowledged (for `SyncEngine.peer(_:holding:)`).
    private func reportAcknowledged(_ subscription: ServedSubscription) {
        engine.acknowledgements.record(
            peer: peerKey, PeerAcknowledgement(subscriptionID: subscription.id, query: subscription.query, position: subscription.acknowledged))
    }

    /// Persists the positions that moved without an acknowledgement (when the session ends).
    func persistUnsaved() {
        for subscription in served.values where subscription.unsaved { persist(subscription) }
    }

    // MARK: - Producing batches

    /// The next batch for some subscription: with `live`, changes made since its backfill
    /// began (they go first); otherwise documents asked for by key, the backfill, or changes
    /// once it is done.
    func nextBatch(live: Bool) throws -> DeltaBatch? {
        for id in served.keys.sorted() {
            guard var subscription = served[id], subscription.summarised else { continue }
            let batch = live ? try liveBatch(&subscription) : try orderedBatch(&subscription)
            served[id] = subscription
            if let batch { return batch }
        }
        return nil
    }

    /// The peer sent everything a merge just logged at `stretch` (`EchoedStretch`): each
    /// served subscription whose cursor stands right before it passes it unread, as reading it
    /// would have found nothing to send. Only in the plain case, with no backfill, answer,
    /// resend or lazy hold under way; otherwise the log is read as usual.
    func passEchoes(_ stretch: ClosedRange<Int64>) {
        for (id, subscription) in served where subscription.cursor == stretch.lowerBound - 1 {
            guard subscription.summarised, !subscription.isBackfilling, subscription.owedReplies == 0, subscription.resend.isEmpty,
                  !subscription.lazy, subscription.backlog == nil else { continue }
            var passed = subscription
            passed.cursor = stretch.upperBound
            passedWithNothingToSend(&passed)
            served[id] = passed
        }
    }

    /// The cursor passed documents with nothing to send: when nothing sent waits for an
    /// acknowledgement either, everything up to the cursor is at the peer or not for it, and
    /// the acknowledged position moves there without asking for one.
    private func passedWithNothingToSend(_ subscription: inout ServedSubscription) {
        guard subscription.isSettled, subscription.cursor > subscription.acknowledged else { return }
        subscription.acknowledged = subscription.cursor
        subscription.unsaved = true
        reportAcknowledged(subscription)
    }

    /// Changes after the backfill's end, sent while the backfill is still running. Not
    /// acknowledged (they are not a prefix of the log); the backfill's end takes them in.
    private func liveBatch(_ subscription: inout ServedSubscription) throws -> DeltaBatch? {
        guard subscription.isBackfilling, store.changeSequence > subscription.liveCursor else { return nil }
        while true {
            let changed = try store.changedDocuments(after: subscription.liveCursor, limit: batchSize)
            subscription.liveCursor = changed.position
            let documents = deltas(changed.documents, for: &subscription)
            if !documents.isEmpty {
                subscription.sentThrough = max(subscription.sentThrough, subscription.liveCursor)
                return DeltaBatch(documents: documents, subscriptionID: subscription.id)
            }
            if changed.isComplete { return nil }
        }
    }

    /// Documents the peer asked for by key, whole; nil once none is left to send.
    private func resendBatch(_ subscription: inout ServedSubscription) throws -> DeltaBatch? {
        while !subscription.resend.isEmpty {
            let keys = Array(subscription.resend.sorted().prefix(batchSize))
            subscription.resend.subtract(keys)
            let documents = deltas(try store.loggedDocuments(keys), for: &subscription, whole: Set(keys))
            // Not acknowledged: the peer asks for them again until a summary that named them is
            // answered.
            if !documents.isEmpty { return DeltaBatch(documents: documents, subscriptionID: subscription.id) }
        }
        return nil
    }

    /// The backfill from the acknowledged position, then every change in log order, with a
    /// position to acknowledge when it moves, and, with the answer to the peer's summaries,
    /// what this side vouches for when the peer does not know it yet.
    private func orderedBatch(_ subscription: inout ServedSubscription) throws -> DeltaBatch? {
        if let batch = try resendBatch(&subscription) { return batch }
        let logEnd = store.changeSequence
        guard subscription.owedReplies > 0 || subscription.cursor < logEnd else { return nil }
        let push = livePush(&subscription)
        if case .holding = push { return nil }
        while true {
            // Read before the documents: it names nothing they lack. (A document it names may
            // have moved further down the log since; the read below finds it wherever it is.)
            let claim = engine.claim(for: subscription.query)
            let backfilling = subscription.isBackfilling
            var changed = try store.changedDocuments(after: subscription.cursor, limit: batchSize)
            var complete = changed.isComplete
            var heldBack = false
            subscription.backlog?.passed(changed.documents)
            if backfilling {
                // Changes past the backfill's end went (or will go) as live batches.
                // The end was readable when the backfill began, so everything before it was
                // committed then: a read that finds nothing more has passed it too (its row
                // changed again, or was evicted).
                let end = subscription.backfillEnd
                if changed.position >= end || changed.isComplete {
                    changed.documents.removeAll { $0.sequence > end }
                    // Complete only when what the read found past the end went live already.
                    subscription.cursor = max(end, subscription.liveCursor)
                    complete = changed.isComplete && subscription.liveCursor >= changed.position
                } else {
                    subscription.cursor = changed.position
                    complete = false
                }
            } else if case .through(let end) = push, changed.position > end {
                // What was written after the hold began waits for the next hold. Not complete:
                // the claim read above may name those changes, and must not be vouched for yet.
                changed.documents.removeAll { $0.sequence > end }
                subscription.cursor = end
                complete = false
                heldBack = true
            } else {
                subscription.cursor = changed.position
            }
            let documents = deltas(changed.documents, for: &subscription)
            if documents.isEmpty {
                passedWithNothingToSend(&subscription)
            } else {
                subscription.sentThrough = max(subscription.sentThrough, subscription.cursor)
            }
            let reply = subscription.owedReplies > 0 && complete
            guard !documents.isEmpty || reply else {
                if complete || subscription.cursor >= logEnd { return nil }
                if heldBack {
                    // What came after this hold's end starts the next hold (and its wake) now:
                    // nothing else may ring the sender for it.
                    _ = livePush(&subscription)
                    return nil
                }
                continue
            }
            // Say what this side vouches for with documents the peer does not know it has, or
            // when the peer asked for documents by key and needs to know what it got back. An
            // answer that brings nothing new vouches for nothing new: two peers in sync exchange
            // a digest and an empty answer, whatever else this store wrote meanwhile.
            var covers: VersionVector?
            // Read again: an eviction since the first reading lowered it, and only what both
            // readings name is both in the store and sent.
            // Only the entries the peer does not know yet go (both sides add them to what it
            // knew), except when it asked for evicted documents and checks them against the whole.
            // A peer that may not read everything the query matches is vouched nothing: the
            // claim names the events of documents withheld from it, and a peer that believed it
            // had them would never ask for them (from here, once allowed, or from elsewhere).
            if complete, permissions.mayReadAll(of: subscription.query), let first = claim,
               let claim = engine.claim(for: subscription.query).map({ vouchable(first.intersection($0)) }),
               (reply && subscription.vouchInReply) || (!documents.isEmpty && !claim.isCovered(by: subscription.peerKnows)) {
                covers = reply && subscription.vouchInReply ? claim : claim.subtracting(subscription.peerKnows)
                subscription.peerKnows.formUnion(claim)
            }
            // A position only when it moves past what the peer acknowledged, or confirms a claim.
            var position: Int64?
            if subscription.cursor > max(subscription.acknowledged, subscription.positionSent) || covers != nil {
                position = subscription.cursor
                subscription.positionSent = max(subscription.positionSent, subscription.cursor)
                if let covers {
                    subscription.unconfirmed.append((subscription.cursor, covers))
                    subscription.unsaved = true
                }
            }
            var answers: UInt64 = 0
            if reply {
                answers = UInt64(subscription.owedReplies)
                subscription.owedReplies = 0
                subscription.vouchInReply = false
            }
            // The answer's last batch says nothing is left; the estimate ends with it.
            let backlog = complete ? subscription.backlog.map { _ in SyncBacklog.none } : subscription.backlog?.backlog
            if complete { subscription.backlog = nil }
            return DeltaBatch(documents: documents, covers: covers, position: position.map { UInt64($0) },
                              subscriptionID: subscription.id, answers: answers, backlog: backlog)
        }
    }

    /// What the peer lacks of each document it should get, in the order given: the events it does
    /// not have — or, for a document it probably does not have at all (one that matches now
    /// but did not as of what the peer knows, or one it asked for by key), the whole state.
    private func deltas(_ documents: [LoggedDocument], for subscription: inout ServedSubscription,
                        whole: Set<DocumentKey> = []) -> [DocumentDelta] {
        var result: [DocumentDelta] = []
        let withheld = engine.withheld
        // Nothing of a collection the peer may not read, removals included.
        for document in documents where !withheld.contains(document.key) && permissions.read.contains(document.key.collection) {
            // A query over a whole collection (or the store) matches without looking at the
            // document, which then need not be built as a value.
            let everything = subscription.query.matchesAll(of: document.key.collection)
            let value = everything ? nil : document.value
            if !everything {
                if let value {
                    guard subscription.query.matches(collection: document.key.collection, value: value) else { continue }
                } else {
                    // A removal carries no data; it goes to every subscriber of the collection, so
                    // no copy of the document anywhere outlives it.
                    guard subscription.query.collection == nil || subscription.query.collection == document.key.collection else { continue }
                }
            }
            // A document asked for by key goes whole: the peer evicted it, and what it may have
            // sent of it since (a write to the evicted document) carries a version that names
            // events it does not have.
            let asked = whole.contains(document.key) || subscription.resend.remove(document.key) != nil
            var known = asked ? VersionVector() : subscription.peerKnows
            if !asked, let had = peerHas[document.key] { known.formUnion(had) }
            // The peer has every event it made itself (one it evicted it asks for by key), unless
            // it lost commits: then as far as it claims.
            if !asked, !subscription.peerLostCommits, let peerSite { known.observe(Stamp(time: Timestamp(rawValue: .max), site: peerSite)) }
            guard var delta = document.state.changes(since: known) else { continue }
            // (A query that matches every document of the collection matched every earlier state
            // too, so the peer has all of it that `known` names: `value` is nil then.)
            if !asked, value != nil, !document.state.version.intersection(known).isEmpty {
                let before = document.state.restricted(to: known).document(id: document.key.id)
                if !(before.map { subscription.query.matches(collection: document.key.collection, value: $0) } ?? false) {
                    delta = document.state
                }
            }
            guard let servable = servable(delta, in: document.key.collection) else { continue }
            delta = servable
            // The peer's conflict view judges whether these writes had seen its own values: say
            // what this store had seen of its events (a delta leaves them out, the peer has them),
            // to a peer that keeps conflicts only (it costs an entry in most documents' versions).
            if peerSaysWhatItSaw, let peerSite, !subscription.peerLostCommits {
                delta.version = delta.version.setting(peerSite, to: store.conflictKnowledge(of: document.key, in: document.state, about: peerSite))
            }
            remember(document.key, has: document.state.version)
            result.append(DocumentDelta(key: document.key, state: delta))
        }
        // Left in log order: the encoder puts a batch in key order (`writeBatch`), through a
        // pointer, where sorting here moved every delta and retained each of its arrays.
        return result
    }

    /// The part of `delta` the peer can take from this store: its own writes, and others' when
    /// this store may relay them and can hand on the credential that lets each writer write
    /// there (the peer would refuse the rest); nil when nothing is left.
    private func servable(_ delta: DocumentState, in collection: String) -> DocumentState? {
        let own = store.site
        guard engine.options.relays else {
            let part = delta.admitting(sites: { $0 == own }, through: Timestamp(rawValue: .max)).admitted
            return part.isEmpty ? nil : part
        }
        guard let origins = engine.options.origins else { return delta }
        let admission = delta.admitting(sites: { site in
            site == own || (origins.credential(of: site) != nil && origins.writable(by: site)?.contains(collection) == true)
        }, through: Timestamp(rawValue: .max))
        if admission.isWhole { return delta }
        return admission.admitted.isEmpty ? nil : admission.admitted
    }

    /// The credentials of the writers whose events `batch` passes on that the peer was not given
    /// yet, to go first (the batch is held until they went); or the batch itself.
    func credentials(ahead batch: DeltaBatch) -> SyncMessage {
        guard peerReadsCredentials, let origins = engine.options.origins else { return .deltaBatch(batch) }
        var writers = Set<SiteID>()
        for delta in batch.documents {
            for element in delta.state.version.elements { writers.insert(element.site) }
        }
        // The peer knows its own credential, and this store's from the handshake.
        writers.remove(store.site)
        if let peerSite { writers.remove(peerSite) }
        let items = engine.credentialsToGive(writers, to: peerKey).sorted().compactMap(origins.credential(of:))
        guard !items.isEmpty else { return .deltaBatch(batch) }
        heldBatch = batch
        var messages = stride(from: 0, to: items.count, by: Credentials.maximumItems).map {
            SyncMessage.credentials(Credentials(items: Array(items[$0..<min($0 + Credentials.maximumItems, items.count)])))
        }
        let first = messages.removeFirst()
        control.append(contentsOf: messages)
        return first
    }

    /// What this store may vouch for: everything it knows, or, when it may not relay, only its
    /// own writes (its peers take no one else's from it, so it must not claim them either).
    private func vouchable(_ claim: VersionVector) -> VersionVector {
        guard !engine.options.relays else { return claim }
        return claim[store.site].map { VersionVector(Stamp(time: $0, site: store.site)) } ?? VersionVector()
    }

    /// Records that the peer has these events of the document (bounded: forgetting only
    /// costs a resend).
    func remember(_ key: DocumentKey, has version: VersionVector) {
        if peerHas.count >= engine.options.sessionMemory, peerHas[key] == nil { peerHas.removeAll(keepingCapacity: true) }
        peerHas[key, default: VersionVector()].formUnion(version)
    }
}
