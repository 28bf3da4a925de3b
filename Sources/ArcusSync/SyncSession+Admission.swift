import ArcusCRDT
import ArcusCodec
import ArcusStore

/// What a store takes of a peer's batch: the events of writers the peer may speak for, in
/// collections they may write, stamped no later than this store's clock can take in.
///
/// - The peer's own events (its site is its identity) count in the collections it may write.
/// - Other writers' events count only from a peer that may relay, and only where their writer
///   may write (`SyncOrigins`, from the credential each writer's certificate is; no `SyncOrigins`:
///   every writer may write everything).
/// - No event, nor the order of a value a removal removed, may be stamped later than
///   `Store.latestAdmissibleTime`: it would win every comparison, and drag this clock, until
///   this clock caught up.
///
/// The rest of each document merges (`DocumentState.admitting`): any part of a delta is a
/// delta, as if the refused events had not arrived yet; they can still come from a peer trusted
/// for them.
///
/// What the peer vouches for (`covers`) is taken the same way: a peer vouches for its own events,
/// and only a relay for others'; and never for events this batch had to refuse for being ahead
/// of this clock, which it should send again once this clock has caught up.
struct BatchAdmission {
    var batch: DeltaBatch
    var refusals = Refusals()

    /// What was left out, by reason, for one log line and the statistics.
    struct Refusals {
        var documents = 0
        /// Collections the peer wrote to without the right to, with the first few documents.
        var forbidden: [String: [DocumentKey]] = [:]
        /// Other writers' events from a peer that may not relay.
        var unrelayed = 0
        /// Writers with no valid credential here, or writing where theirs does not allow.
        var unauthorised: Set<SiteID> = []
        /// Documents with events stamped beyond this clock's bound.
        var ahead = 0

        var isEmpty: Bool { documents == 0 }
        /// Documents named per collection in a log line.
        static let examples = 3

        mutating func add(_ other: Refusals) {
            documents += other.documents
            for (collection, keys) in other.forbidden {
                forbidden[collection] = Array((forbidden[collection, default: []] + keys).prefix(Self.examples))
            }
            unrelayed += other.unrelayed
            unauthorised.formUnion(other.unauthorised)
            ahead += other.ahead
        }

        var description: String {
            var parts: [String] = []
            for (collection, keys) in forbidden.sorted(by: { $0.key < $1.key }) {
                parts.append("it may not write \(collection) (its writes to " + keys.map { "\($0.id)" }.joined(separator: ", ")
                    + (keys.count == Self.examples ? ", …" : "") + " were left out)")
            }
            if unrelayed > 0 { parts.append("others' writes in \(unrelayed) documents, which it may not relay") }
            if !unauthorised.isEmpty {
                parts.append("writes by \(unauthorised.count) writers whose credentials are unknown here or do not allow them ("
                    + unauthorised.sorted().prefix(4).map(\.description).joined(separator: ", ") + (unauthorised.count > 4 ? ", …)" : ")"))
            }
            if ahead > 0 { parts.append("writes in \(ahead) documents stamped too far ahead of this clock") }
            return parts.joined(separator: "; ")
        }
    }
}

extension BatchAdmission {
    /// The part of `batch`, from the peer whose site is `peerSite` with `permissions`, that a
    /// store whose clock takes in nothing later than `latest` merges.
    ///
    /// What the peer says it had seen of this store's own events (`ownSite`'s entry of a
    /// document's version) is no write: it passes whatever the peer may relay, and the merge
    /// uses it for the conflict view only (`WriteTransaction.merge`), from a peer that
    /// `saysWhatItSaw` (`ConflictKnowledge`); from another, the entry is an event like any other.
    init(_ batch: DeltaBatch, from peerSite: SiteID?, ownSite: SiteID? = nil, saysWhatItSaw: Bool = true,
         permissions: SyncPermissions, origins: (any SyncOrigins)?, latest: Timestamp) {
        self.batch = batch
        var writable: [SiteID: CollectionSet?] = [:]
        func writableCollections(of site: SiteID) -> CollectionSet? {
            guard let origins else { return .all }
            if let known = writable[site] { return known }
            let found = origins.writable(by: site)
            writable[site] = found
            return found
        }
        // Per site, the earliest event refused that should come again: what the peer vouches for
        // stops below it.
        var askAgainFrom: [SiteID: Timestamp] = [:]
        var kept: [DocumentDelta] = []
        kept.reserveCapacity(batch.documents.count)
        for delta in batch.documents {
            let collection = delta.key.collection
            var state = delta.state
            let seenOfOwn = saysWhatItSaw ? ownSite.flatMap { state.version[$0] } : nil
            if let ownSite, seenOfOwn != nil { state.version = state.version.setting(ownSite, to: nil) }
            let admission = state.admitting(sites: { site in
                if site == peerSite { return permissions.write.contains(collection) }
                return permissions.relay && (writableCollections(of: site)?.contains(collection) ?? false)
            }, through: latest)
            if admission.isWhole {
                var whole = delta
                // The claim about this store's events passes, no later than its clock takes.
                if let ownSite, let seenOfOwn, seenOfOwn > latest { whole.state.version = whole.state.version.setting(ownSite, to: latest) }
                kept.append(whole)
                continue
            }
            refusals.documents += 1
            let refusedSites = admission.refused.elements.map(\.site)
            if let peerSite, refusedSites.contains(peerSite), !permissions.write.contains(collection),
               refusals.forbidden[collection, default: []].count < Refusals.examples {
                refusals.forbidden[collection, default: []].append(delta.key)
            }
            if !permissions.relay, refusedSites.contains(where: { $0 != peerSite }) { refusals.unrelayed += 1 }
            // Events this store wants, but not from here or not now: ahead of its clock, or by a
            // writer whose credential it lacks (passed on with the events, normally; it may have
            // been lost on the way). What the peer vouches for stops below them, so they come
            // again. A writer's events where its credential does not let it write are wanted from
            // no one.
            var wanted = Set<SiteID>()
            for element in admission.refused.elements where element.site != peerSite && permissions.relay {
                let rights = writableCollections(of: element.site)
                if !(rights?.contains(collection) ?? false) { refusals.unauthorised.insert(element.site) }
                if rights == nil { wanted.insert(element.site) }
            }
            if admission.refusedForTime {
                refusals.ahead += 1
                wanted.formUnion(refusedSites)
            }
            for element in admission.refused.elements where wanted.contains(element.site) && askAgainFrom[element.site].map({ element.time < $0 }) ?? true {
                askAgainFrom[element.site] = element.time
            }
            if !admission.admitted.isEmpty || !admission.admitted.version.isEmpty {
                var admitted = admission.admitted
                if let ownSite, let seenOfOwn { admitted.version = admitted.version.setting(ownSite, to: min(seenOfOwn, latest)) }
                kept.append(DocumentDelta(key: delta.key, state: admitted))
            }
        }
        self.batch.documents = kept
        if let covers = batch.covers {
            var trusted = VersionVector()
            for element in covers.elements where element.site == peerSite || permissions.relay {
                var time = min(element.time, latest)
                if let late = askAgainFrom[element.site] {
                    guard late.rawValue > 0 else { continue }
                    time = min(time, Timestamp(rawValue: late.rawValue - 1))
                }
                trusted.observe(Stamp(time: time, site: element.site))
            }
            self.batch.covers = trusted
        }
    }
}

extension SyncSession {
    /// The part of `batch` this store takes (see `BatchAdmission`).
    func admit(_ batch: DeltaBatch) -> BatchAdmission {
        BatchAdmission(batch, from: peerSite, ownSite: store.site, saysWhatItSaw: peerSaysWhatItSaw,
                       permissions: permissions, origins: engine.options.origins, latest: store.latestAdmissibleTime)
    }

    /// Logs what a batch had refused: the first few batches in full, then at most one line a
    /// minute with what was refused since, so a peer cannot set the rate of this store's log.
    func report(_ refusals: BatchAdmission.Refusals) {
        guard !refusals.isEmpty else { return }
        statistics.documentsRefused += refusals.documents
        refusalLog.add(refusals)
        guard let line = refusalLog.due(now: ContinuousClock.now) else { return }
        engine.options.log(.warning, "\(peerDescription) sent writes this store refused: \(line)")
    }
}

/// Refusals gathered between log lines (see `SyncSession.report`).
struct RefusalLog {
    private var pending = BatchAdmission.Refusals()
    private var linesWritten = 0
    private var lastLine: ContinuousClock.Instant?
    static let burst = 5
    static let interval = Duration.seconds(60)

    mutating func add(_ refusals: BatchAdmission.Refusals) { pending.add(refusals) }

    /// The line to write now, if one is due (`force`: whatever is pending, when the session ends).
    mutating func due(now: ContinuousClock.Instant, force: Bool = false) -> String? {
        guard !pending.isEmpty else { return nil }
        if !force, linesWritten >= Self.burst, let lastLine, now - lastLine < Self.interval { return nil }
        let line = "\(pending.documents) documents: \(pending.description)"
        pending = BatchAdmission.Refusals()
        linesWritten += 1
        lastLine = now
        return line
    }
}
