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
    /// The link goes lazy (or eager) both ways, as in Plumtree: a change that reached the peer
    /// by another path first reached this store by it too, or soon will, so this store asks the
    /// same of the peer for its own subscriptions that overlap. The eager links then form one
    /// tree, whoever writes; pruned one way only, a write could find every link out of its
    /// writer lazy, be held on each, and graft them all back.
    func receivedPushNote(_ note: PushNote) {
        var woken = false
        for id in note.lazy {
            guard let subscription = served[id] else { continue }
            served[id]?.lazy = true
            for own in overlapping(subscription.query) where !lazyAsked.withLock({ $0.contains(own) }) && engine.pushesEagerly(own, apart: self) {
                lazyAsked.withLock { _ = $0.insert(own) }
                queue(PushNote(lazy: [own]))
            }
        }
        for id in note.eager {
            guard let subscription = served[id] else { continue }
            served[id]?.lazy = false
            served[id]?.holdStarted = nil
            woken = true
            for own in overlapping(subscription.query) { askEager(own) }
        }
        // About the peer's own store only: at worst it withholds from itself.
        for document in note.has { remember(document.key, has: document.version) }
        if woken { ring() }
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
        if changed == 0, !lazy, engine.pushesEagerly(id, apart: self) {
            lazyAsked.withLock { _ = $0.insert(id) }
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
           queued.lazy.count + queued.eager.count + note.lazy.count + note.eager.count <= PushNote.maximumSubscriptions {
            for id in note.lazy {
                queued.eager.removeAll { $0 == id }
                if !queued.lazy.contains(id) { queued.lazy.append(id) }
            }
            for id in note.eager {
                queued.lazy.removeAll { $0 == id }
                if !queued.eager.contains(id) { queued.eager.append(id) }
            }
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
