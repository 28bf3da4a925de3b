import ArcusCRDT
import ArcusCodec
import GRDB

/// What a store sends a peer: the documents changed after a change-log position, as a batch
/// that carries only what the peer's version vector lacks.
public struct ChangeSet: Sendable {
    /// The documents, in key order, to be encoded as their changes since the peer's version.
    public var batch: DeltaBatch
    /// The change-log position after the last document in the batch: ask from here next time.
    public var position: Int64
    /// Whether the batch holds every change up to the store's latest position.
    public var isComplete: Bool
}

extension Store {
    /// The documents changed after `position` in the change log, at most `limit` of them, to be
    /// sent to a peer that has seen `known`. Reads an index range of the log, never the whole
    /// collection: a peer that is up to date costs one index probe.
    ///
    /// When the set is complete, its batch also `covers` the store's version vector, so the peer
    /// learns it has seen everything this store has.
    ///
    /// With `peer` (the receiver's site), each document says what this store had seen of the
    /// peer's own events as `conflictKnowledge` does, for the peer's conflict view.
    public func changes(after position: Int64, since known: VersionVector, limit: Int = 1000, to peer: SiteID? = nil) throws -> ChangeSet {
        let changed = try changedDocuments(after: position, limit: limit)
        var documents = changed.documents.map { document in
            var state = document.state
            if let peer { state.version = state.version.setting(peer, to: conflictKnowledge(of: document.key, in: state, about: peer)) }
            return DocumentDelta(key: document.key, state: state)
        }
        documents.sort { $0.key < $1.key }
        return ChangeSet(batch: DeltaBatch(documents: documents, covers: changed.isComplete ? changed.version : nil,
                                           position: UInt64(changed.position), since: known),
                         position: changed.position, isComplete: changed.isComplete)
    }

    /// Joins a batch received from a peer, in one transaction: observers see the merged
    /// documents like local writes. A batch that `covers` a version vector (the last one of a
    /// whole-store exchange) raises this store's vector to it — except for sites with events
    /// stamped beyond `latestAdmissibleTime`, which are refused (see `WriteTransaction.merge`).
    /// Returns what changed. `sayingWhatItSaw`: as `WriteTransaction.merge`.
    @discardableResult
    public func merge(_ batch: DeltaBatch, sayingWhatItSaw: Bool = false) throws -> [WriteTransaction.Result] {
        try write { tx in
            for delta in batch.documents { try tx.merge(delta, sayingWhatItSaw: sayingWhatItSaw) }
            if let covers = batch.covers { tx.observe(covers) }
        }
    }
}

extension WriteTransaction {
    /// Joins a delta from another replica into the document. Returns whether anything changed.
    /// The delta is checked first (nesting), since it may come from the network.
    ///
    /// Events stamped beyond `latestAdmissibleTime` are refused: they would win every
    /// last-writer-wins comparison, and the clock would stamp every later local write after them,
    /// until the real time caught up. The rest of the delta is merged
    /// (`DocumentState.admitting`), claiming nothing it refused, and only its times reach the
    /// clock. (Sync admits batches itself before they get here; this is the store's own guard.)
    ///
    /// Its events do not enter the store's version vector: a vector says "every event of this
    /// site up to here", and one document of a batch proves nothing about the others. Only a
    /// complete batch's `covers` (and local writes) advance it, so an exchange cut short leaves
    /// the vector behind what the store holds — the safe side, costing a resend at most.
    ///
    /// `sayingWhatItSaw`: whether the delta's version says, in this store's own entry, what its
    /// sender had seen of this store's events (`Store.conflictKnowledge`, from a peer whose hello
    /// lists the capability). When it does not, the conflict view takes the sender to have seen
    /// them all: it misses what it cannot know rather than invent conflicts.
    @discardableResult
    public func merge(_ delta: DocumentDelta, sayingWhatItSaw: Bool = false) throws -> Bool {
        try DocumentValidation.check(delta: delta.state, key: delta.key)
        let latest = latestAdmissibleTime
        var incoming = delta.state
        let admission = incoming.admitting(sites: { _ in true }, through: latest)
        if !admission.isWhole {
            incoming = admission.admitted
            documentsRefusedForTime += 1
            sitesRefusedForTime.formUnion(admission.refused.elements.map(\.site))
            // Sites claimed beyond the bound with no refused cell in this delta are refused too.
            for element in delta.state.version.elements where element.time > latest { sitesRefusedForTime.insert(element.site) }
        }
        // Cells of a reaped tombstone's document that a late copy brings back stay dead.
        incoming = unreaped(incoming, of: delta.key)
        let row = DocumentRows.RowID(delta.key)
        // A document created in an event this store has not seen is most likely not here: it
        // is written without first looking for its row, a probe of the index that cost a
        // catching-up follower 7% of its time to find nothing. Should the row exist after all
        // (the same ID created on two devices), the delta is joined into it as usual.
        if createsUnseen(incoming), let joined = try join(incoming, into: row, sayingWhatItSaw: sayingWhatItSaw, lookingFirst: false) {
            return joined
        }
        return try join(incoming, into: row, sayingWhatItSaw: sayingWhatItSaw, lookingFirst: true) ?? false
    }

    /// Whether `incoming` holds its document's creation (its root marker), stamped with an
    /// event this store has not seen.
    private func createsUnseen(_ incoming: DocumentState) -> Bool {
        guard let created = incoming.rootPresence else { return false }
        return !versionBeforeMerging.contains(created)
    }

    /// Joins admitted `incoming` into `row`'s document and saves the outcome. Without
    /// `lookingFirst`, the document is taken to have no row and written only if that holds
    /// (`save(asNew:)`); nil then says it has one, and nothing was written.
    private func join(_ incoming: DocumentState, into row: DocumentRows.RowID, sayingWhatItSaw: Bool, lookingFirst: Bool) throws -> Bool? {
        var incoming = incoming
        var state = lookingFirst ? try load(row, toChange: true) ?? DocumentState() : DocumentState()
        var changed = false
        // Nothing left to merge into nothing: no row for a reaped document's old copy.
        guard !incoming.isEmpty || !state.isEmpty else { return false }
        defer { if lookingFirst, !changed { store.stateCache.giveBack(state, of: row.key) } }
        // What the sender had seen, for the conflict view. Its entry for this store's own events
        // says what the sender had seen of them (`Store.conflictKnowledge`), more or less than
        // is here: the state claims exactly the own events it holds.
        let seen = incoming.version
        let site = store.site
        if seen[site] != nil {
            incoming.version = incoming.version.setting(site, to: [state.version[site], incoming.eventVersion[site]].compactMap { $0 }.max())
        }
        // Judged only where something can come of it: a store that keeps conflicts, or a
        // document with kept ones that this merge may supersede. Only then is the state before
        // the join kept, since keeping it makes the join copy the state.
        let before = store.conflictsPerField > 0 || !keptLosers(row.key).isEmpty ? state : nil
        let wasLive = state.isLive, hadAttachments = !state.attachments.isEmpty
        changed = state.join(incoming)
        guard changed else { return false }
        store.observe(incoming.eventVersion.maxTime, through: latestAdmissibleTime)
        guard try save(row, state: state, delta: incoming, wasLive: wasLive, hadAttachments: hadAttachments, local: false, joinsDelta: true,
                       asNew: !lookingFirst) else { return nil }
        if let before {
            try recordConflicts(FieldConflicts.judge(before: before, incoming: incoming, seen: seen, seenInFull: sayingWhatItSaw ? nil : site),
                                of: row.key, seen: seen)
        }
        return true
    }

    /// Moves the document to the end of the change log without changing it, so that every
    /// reader of the log (sync, resuming from a position) meets it again. Returns whether the
    /// document has a row. For a document whose earlier state was incomplete (evicted, then
    /// partly written again) and that is now whole again.
    @discardableResult
    public func relog(_ key: DocumentKey) throws -> Bool {
        let row = DocumentRows.RowID(key)
        guard let state = try load(row) else { return false }
        try save(row, state: state, delta: DocumentState(), wasLive: state.isLive, hadAttachments: !state.attachments.isEmpty, local: false)
        return true
    }

    /// Applies a CRDT delta-mutator (`DocumentState.set`, `.increment`, …) to the document at
    /// `key` with a fresh stamp, for callers that speak the CRDT directly (replays, tools).
    /// Returns whether it changed anything.
    @discardableResult
    public func apply(_ key: DocumentKey, _ mutation: (inout DocumentState, Stamp) -> DocumentState?) throws -> Bool {
        try mutate(key, mutation)
    }

    /// Records that the store has seen every event in `version` (a peer's complete batch): of
    /// the sites this transaction refused no event of for its time, up to `latestAdmissibleTime`.
    func observe(_ version: VersionVector) {
        let latest = latestAdmissibleTime
        var vouched = VersionVector()
        for element in version.elements where element.time <= latest && !sitesRefusedForTime.contains(element.site) {
            vouched.observe(Stamp(time: element.time, site: element.site))
        }
        versionAdded.formUnion(vouched)
        store.observe(vouched.maxTime, through: latest)
    }
}
