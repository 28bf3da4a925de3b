import ArcusCRDT
import ArcusCodec
import ArcusStore

/// Lazy push (issue 20): where kept links close a cycle, a peer is handed each live change by
/// every neighbour that merged it before the peer had it. Each session starts pushing eagerly;
/// a subscriber handed a live batch that brought nothing new asks that server to push lazily
/// (`PushNote.lazy`), as long as another of its sessions still pushes the subscription eagerly.
/// A lazy server holds the subscription's live changes for `Options.lazyPushHold`, then sends
/// what the subscriber still lacks: the subscriber notes what it merges to its lazy servers
/// (`PushNote.has`, taken into `peerHas`), so that what reached it by another path meanwhile
/// stays behind. A lazy server's batch that brings something new means the eager path was
/// slower, or cut: the subscriber asks it to push eagerly again (`PushNote.eager`). The eager
/// links left form a tree per subscription, grown by where changes arrive first; nothing is
/// lost on a lazy link, only delayed by the hold.
///
/// Backfill (the answer to a summary) and documents asked for by key are never held; with one
/// session, nothing is ever lazy.
extension SyncSession {
    /// How the next batch of a served subscription's changes goes.
    enum LivePush {
        /// At once (eager, or catching up).
        case now
        /// Held: nothing goes yet.
        case holding
        /// The hold is over: changes up to this log position go, as far as the peer lacks them.
        case through(Int64)
    }

    /// Whether the served subscription's changes go now, starting a hold when a lazy one has
    /// new changes and none is running.
    func livePush(_ subscription: inout ServedSubscription) -> LivePush {
        guard let hold = engine.options.lazyPushHold, subscription.lazy, !subscription.isBackfilling,
              subscription.owedReplies == 0, subscription.resend.isEmpty else {
            subscription.holdStarted = nil
            return .now
        }
        if let started = subscription.holdStarted {
            if subscription.cursor < subscription.holdEnd {
                return ContinuousClock.now - started >= hold ? .through(subscription.holdEnd) : .holding
            }
            subscription.holdStarted = nil
        }
        // What is written from here on waits for the next hold: each change is held about as
        // long, however busy the log is.
        subscription.holdStarted = .now
        subscription.holdEnd = store.changeSequence
        Task { [weak self] in
            try? await Task.sleep(for: hold)
            self?.ring()
        }
        return .holding
    }

    /// The peer's note: how it wants its subscriptions pushed, and what it has.
    ///
    /// A prune goes both ways, as in Plumtree: a change that reached the peer by another path
    /// first reached this store by it too, or soon will, so this store asks the same of the
    /// peer for its own subscriptions that overlap, and the eager links form one tree, whoever
    /// writes. A graft goes one way (see below), and a prune that would leave this store no
    /// eager path out is refused.
    func receivedPushNote(_ note: PushNote) {
        var woken = false
        for id in note.lazy {
            // Refused while no other peer is pushed these changes eagerly: this store's own
            // writes would then leave it only after a hold, on every link, and be grafted back.
            // (Two neighbours that prune their links to this store at once would do that.) The
            // peer is told, so that it counts this link as eager again (and a duplicate it is
            // handed later may prune another).
            guard let subscription = served[id] else { continue }
            guard engine.takeLazy(id, of: subscription.query, for: self) else {
                queue(PushNote(refused: [id]))
                continue
            }
            served[id]?.lazy = true
            for own in overlapping(subscription.query) where engine.askLazy(own, of: self) {
                queue(PushNote(lazy: [own]))
            }
        }
        for id in note.eager {
            guard served[id] != nil else { continue }
            served[id]?.lazy = false
            served[id]?.holdStarted = nil
            woken = true
            // Not both ways: answering a graft with one, as a prune is answered with a prune,
            // echoes. A prune and a graft in flight at once then bounce between the two
            // stores for as long as the session lasts (seen under load). A lazy link of this
            // store's own that brings something new is grafted by this store, as any other.
        }
        // Refused: the peer pushes these eagerly still (no message back: nothing changed there).
        if !note.refused.isEmpty { lazyAsked.withLock { $0.subtract(note.refused) } }
        // About the peer's own store only: at worst it withholds from itself.
        for document in note.has { remember(document.key, has: document.version) }
        if woken { ring() }
    }

    /// Mirrors which of the peer's subscriptions go eagerly, for `SyncEngine.takeLazy`.
    func noteEagerlyServed() {
        let eager = served.compactMapValues { $0.lazy ? nil : Optional($0.query.collection) }
        eagerlyServed.withLock { if $0 != eager { $0 = eager } }
    }

    /// This store's subscriptions announced to the peer that share documents with `query`.
    private func overlapping(_ query: SubscriptionQuery) -> [UInt64] {
        announced.keys.sorted().filter { id in
            guard let own = engine.subscription(id)?.query else { return false }
            return own.contains(query) || query.contains(own) || own.collection == query.collection
        }
    }

    /// After merging a batch of this store's subscription `id`: asks the server to push lazily
    /// when a live batch brought nothing new, and eagerly again when a lazy one brought something.
    func pushAfterMerging(_ batch: DeltaBatch, changed: Int, subscription id: UInt64) {
        guard engine.options.lazyPushHold != nil, peerReadsPushNotes, !batch.documents.isEmpty,
              batch.answers == 0, announced[id] == true else { return }
        let lazy = lazyAsked.withLock { $0.contains(id) }
        if changed == 0, !lazy, engine.askLazy(id, of: self) {
            queue(PushNote(lazy: [id]))
        } else if changed > 0, lazy {
            askEager(id)
        }
    }

    /// Whether this session pulls subscription `id` from its peer eagerly (from any thread).
    nonisolated func pushesEagerly(_ id: UInt64) -> Bool {
        pulling && isReady && !lazyAsked.withLock { $0.contains(id) }
    }

    /// Asks the peer to push subscription `id` eagerly again.
    func askEager(_ id: UInt64) {
        guard lazyAsked.withLock({ $0.remove(id) != nil }), endReason == nil else { return }
        queue(PushNote(eager: [id]))
    }

    /// Tells the peer, a lazy server, what this store merged from elsewhere.
    func noteHas(_ documents: [DocumentVersion]) {
        guard endReason == nil, peerReadsPushNotes else { return }
        queue(PushNote(has: documents))
    }

    /// Queues a note, into one still queued when it has room: notes made while the link is busy
    /// go as one.
    private func queue(_ note: PushNote) {
        if let index = control.lastIndex(where: { if case .pushNote = $0 { true } else { false } }),
           case .pushNote(var queued) = control[index],
           queued.has.count + note.has.count <= PushNote.maximumDocuments,
           queued.lazy.count + queued.eager.count + queued.refused.count + note.lazy.count + note.eager.count + note.refused.count
            <= PushNote.maximumSubscriptions {
            for id in note.lazy {
                queued.eager.removeAll { $0 == id }
                if !queued.lazy.contains(id) { queued.lazy.append(id) }
            }
            for id in note.eager {
                queued.lazy.removeAll { $0 == id }
                if !queued.eager.contains(id) { queued.eager.append(id) }
            }
            for id in note.refused where !queued.refused.contains(id) { queued.refused.append(id) }
            var has = Dictionary(queued.has.map { ($0.key, $0.version) }, uniquingKeysWith: { $0.union($1) })
            for document in note.has { has[document.key, default: VersionVector()].formUnion(document.version) }
            queued.has = has.map { DocumentVersion(key: $0.key, version: $0.value) }.sorted { $0.key < $1.key }
            control[index] = .pushNote(queued)
            return
        }
        var note = note
        note.has.sort { $0.key < $1.key }
        send(.pushNote(note))
    }
}
