import ArcusCRDT
import ArcusCodec
import ArcusStore
import Foundation
import Synchronization

/// One store's side of sync: its subscriptions, and a session with each peer it is connected to.
///
/// Sync is pull. `registerSubscription` tells every connected peer what this store wants; each
/// peer sends the matching documents it has, then their changes as they happen, until the
/// subscription is cancelled. A store that subscribes to nothing receives nothing. A peer that
/// subscribes to the same data relays what it receives: that is multi-hop.
///
/// The engine keeps what it needs to resume in the store (`SyncRecords`): its subscriptions
/// with what it already has of each, and, per peer, how far that peer has acknowledged.
public final class SyncEngine: Sendable {
    public struct Options: Sendable {
        /// This peer's name, for the other side's logs.
        public var name = ""
        /// Most documents in one delta batch; nil sizes batches to the link (see
        /// `SyncSession.batchSize`).
        public var batchSize: Int? = nil
        /// Documents each session remembers the peer has (so nothing is echoed back to it).
        public var sessionMemory = 100_000
        /// Who may have written what (see `SyncOrigins`); nil takes every writer's events.
        public var origins: (any SyncOrigins)? = nil
        /// Whether this store's credential lets it pass on other writers' events. When not, it
        /// serves its own events only and vouches for nothing else: its peers would refuse them.
        public var relays = true
        /// Most bytes of blobs peers may make this store keep by asking it to relay them: the
        /// relayed fetches under way (each reserves its blob's length) and the blobs kept for no
        /// document (`Store.reclaimableAttachments`), of which the oldest are reclaimed to make
        /// room. 256 MiB: the largest blob the agent's API takes fits. A blob larger than this is
        /// not relayed; fetchers then need a peer that has it, or one that references it and
        /// fetches it for itself.
        public var relayedAttachmentBytes: Int64 = 256 << 20
        /// How long a server holds the live changes of a subscription its peer asked it to push
        /// lazily, before it sends what the peer still lacks (see `SyncSession` lazy push);
        /// nil turns lazy push off (peers are not offered it, and every change goes at once;
        /// `arcus demo --lazy-hold 0`). On by default: where sessions close cycles it keeps
        /// about half the deliveries from being duplicates (Docs/Sync.md, "Lazy push").
        public var lazyPushHold: Duration? = lazyPushDefaultHold
        public static let lazyPushDefaultHold: Duration = .milliseconds(200)
        /// Where the engine reports what a person running it may need to know.
        public var log: @Sendable (SyncLogLevel, String) -> Void = { _, _ in }

        public init() {}
    }

    public let store: Store
    public let options: Options
    /// This peer's identity on the wire: its store's site id, 8 bytes big-endian.
    public let peerID: [UInt8]

    /// The hello every session of this engine starts with.
    public var hello: Hello {
        Hello(
            peerID: peerID, protocolVersion: SyncSession.protocolVersion,
            capabilities: [SyncBacklog.capability, ReapedHorizon.capability] + (options.origins == nil ? [] : [Credentials.capability])
                + (options.lazyPushHold == nil ? [] : [PushNote.capability])
                + (store.conflictsPerField == 0 ? [] : [ConflictKnowledge.capability]),
            name: options.name
        )
    }

    struct State {
        var subscriptions: [UInt64: LocalSubscription] = [:]
        var nextSubscriptionID: UInt64 = 1
        var sessions: [ObjectIdentifier: SyncSession] = [:]
        var stopped = false
    }

    let state = Mutex(State())
    /// Where every session of this engine runs, one job at a time. One queue, not one per
    /// session: their commits take turns at the store's one writer anyway, and a queue each let
    /// 15 sessions of one agent take 15 threads and starve everything else on a small device
    /// (its HTTP API went unanswered for a minute in the 16-host bed).
    let sessionExecutor = DispatchQueueExecutor(label: "arcus.sync")
    let attachments: AttachmentFetches
    let progress = SyncProgressTracker()
    /// How far each peer served has acknowledged this store's log (`acknowledgements(of:)`).
    let acknowledgements = PeerAcknowledgements()
    private let hooks = Mutex<[ChangeListener]>([])
    /// Per peer (its key), the writers whose credentials it was given (see `credentialsToGive`).
    private let credentialsGiven = Mutex<[String: Set<SiteID>]>([:])
    /// Active subscriptions whose documents were evicted: announced again after the commit.
    private let reannounce = Mutex<Set<UInt64>>([])
    /// Serialises `askLazy` and `takeLazy`.
    private let lazyServing = Mutex(())
    /// "peer/subscription" pairs whose summary asking for this store's own events was answered.
    private let ownEventsAsked = Mutex<Set<String>>([])

    public init(store: Store, options: Options = Options()) throws {
        self.store = store
        self.options = options
        peerID = withUnsafeBytes(of: store.site.rawValue.bigEndian) { Array($0) }
        attachments = AttachmentFetches(store: store, relayAllowance: options.relayedAttachmentBytes, log: options.log)
        var loaded: [UInt64: LocalSubscription] = [:]
        for (key, value) in try store.syncRecords(prefix: "sub/") {
            guard let id = UInt64(key.dropFirst(4)), let subscription = LocalSubscription(id: id, record: value) else { continue }
            loaded[id] = subscription
        }
        try Self.lowerPoisonedClaims(&loaded, store: store, log: options.log)
        state.withLock { state in
            state.subscriptions = loaded
            state.nextSubscriptionID = (loaded.keys.max() ?? 0) + 1
        }
        store.withhold(withheld)
        // Evictions lower what this store claims, in the evicting transaction itself; commits
        // wake every session to send what changed.
        let hook = store.addCommitHook { [weak self] transaction, changes in
            try self?.evicted(changes, in: transaction)
        }
        let listener = store.addChangeListener { [weak self] _ in self?.storeChanged() }
        hooks.withLock { $0 = [hook, listener] }
        attachments.sessions.withLock { $0 = { [weak self] in self?.sessions ?? [] } }
    }

    /// Subscriptions whose knowledge a poisoned clock inflated (claims past this store's
    /// bound, or of sites its clock repair lowered) claim only what the store holds, so that
    /// peers send those sites' writes again; recorded at once, since the repair is reported only
    /// by the open that made it.
    private static func lowerPoisonedClaims(_ subscriptions: inout [UInt64: LocalSubscription], store: Store, log: @Sendable (SyncLogLevel, String) -> Void) throws {
        let bound = store.latestAdmissibleTime
        let sites = Set(store.recoveredFromClockPoisoning?.sitesLowered ?? [])
        let held = store.version
        var lowered: [LocalSubscription] = []
        for (id, var subscription) in subscriptions where subscription.lowerClaims(beyond: bound, of: sites, held: held, site: store.site) {
            subscriptions[id] = subscription
            lowered.append(subscription)
        }
        guard !lowered.isEmpty else { return }
        try store.write { tx in
            for subscription in lowered { try tx.setSyncRecord(SyncRecords.subscriptionKey(subscription.id), subscription.record) }
        }
        log(.warning, """
            \(lowered.count) subscription(s) claimed writes this store does not hold (a clock that was poisoned, or repaired): \
            they now claim what it holds, and peers send the rest again
            """)
    }

    // MARK: - Subscriptions

    /// Asks every peer, now and later, for the documents `query` matches (`SELECT * FROM coll
    /// [WHERE …]`, or "" for the whole store), then their changes as they happen, until
    /// `cancel()`. Subscribing again to a query cancelled before resumes from what the store
    /// already has: peers send only what it lacks.
    ///
    /// **Evicting and subscriptions.** `EVICT` removes documents from this store only. Evicting
    /// documents that an active subscription matches is a trap: the subscription still asks for
    /// them, so peers send them straight back. The engine logs a warning and asks connected
    /// peers for exactly those documents at once. To free space for good, cancel the
    /// subscription first, then evict: nothing comes back while it is cancelled. Subscribing
    /// again later brings back what is missing — the evicted documents, by key, and what changed
    /// meanwhile — and nothing the store kept.
    public func registerSubscription(_ query: String, arguments: [String: Value] = [:]) throws -> SyncSubscription {
        try registerSubscription(SubscriptionQuery(query, arguments: arguments))
    }

    /// Subscribes to a parsed query; see `registerSubscription(_:arguments:)`.
    public func registerSubscription(_ query: SubscriptionQuery) throws -> SyncSubscription {
        let subscription = state.withLock { state -> LocalSubscription in
            if let existing = state.subscriptions.values.first(where: { $0.query == query }) {
                var revived = existing
                revived.active = true
                state.subscriptions[existing.id] = revived
                return revived
            }
            let fresh = LocalSubscription(id: state.nextSubscriptionID, query: query, active: true)
            state.nextSubscriptionID += 1
            state.subscriptions[fresh.id] = fresh
            return fresh
        }
        try saveSubscription(subscription)
        for session in sessions { session.announce(subscription.id) }
        return SyncSubscription(engine: self, id: subscription.id, query: query)
    }

    func cancelSubscription(_ id: UInt64) {
        let cancelled = state.withLock { state -> LocalSubscription? in
            guard var subscription = state.subscriptions[id], subscription.active else { return nil }
            subscription.active = false
            state.subscriptions[id] = subscription
            return subscription
        }
        guard let cancelled else { return }
        do {
            try saveSubscription(cancelled)
        } catch {
            options.log(.warning, "could not record that subscription \(cancelled.query) was cancelled: \(error)")
        }
        for session in sessions { session.withdraw(id) }
    }

    /// Writes a subscription's record, keeping the missing documents, knowledge and floor that
    /// the store holds now (an eviction may have changed them since `subscription` was read).
    private func saveSubscription(_ subscription: LocalSubscription) throws {
        try store.write { tx in
            let key = SyncRecords.subscriptionKey(subscription.id)
            var current = subscription
            if let record = try tx.syncRecord(key), let stored = LocalSubscription(id: subscription.id, record: record) {
                current.knowledge = stored.knowledge
                current.ownFloor = stored.ownFloor
                current.missing = stored.missing
            }
            try tx.setSyncRecord(key, current.record)
        }
    }

    /// The queries this store subscribes to.
    public var subscriptions: [SubscriptionQuery] {
        state.withLock { $0.subscriptions.values.filter(\.active).sorted { $0.id < $1.id }.map(\.query) }
    }

    func subscription(_ id: UInt64) -> LocalSubscription? { state.withLock { $0.subscriptions[id] } }

    var activeSubscriptionIDs: [UInt64] {
        state.withLock { $0.subscriptions.values.filter(\.active).map(\.id).sorted() }
    }

    /// What this store may vouch it has of the documents `query` matches, serving a peer: the
    /// knowledge of its own subscriptions that contain the query, with its own events, below
    /// what it evicted; nil when it subscribes to nothing that contains it (it then vouches for
    /// nothing, and peers keep their own count).
    func claim(for query: SubscriptionQuery) -> VersionVector? {
        claim { $0.contains(query) }
    }

    /// What the active subscriptions `covering` accepts vouch for, together (nil: none does).
    func claim(where covering: (SubscriptionQuery) -> Bool) -> VersionVector? {
        let localTime = store.version[store.site]
        return state.withLock { state in
            var claim: VersionVector?
            for subscription in state.subscriptions.values where subscription.active && covering(subscription.query) {
                let own = subscription.vouch(site: store.site, localTime: localTime)
                // Each subscription vouches for the events it lists: the store has them all.
                claim = claim.map { $0.union(own) } ?? own
            }
            return claim
        }
    }

    /// Merges a batch a peer sent for subscription `id`, and records what its `covers` vouch
    /// for and the position it is acknowledged with, in one transaction. Returns the documents
    /// that changed.
    ///
    /// A `stale` batch was produced before the peer took in this side's latest summary: its
    /// `covers` may vouch for events this store evicted and could not get back since, so they
    /// count only below where that lowered its claims.
    func merge(_ batch: DeltaBatch, subscription id: UInt64, from peer: String, stale: Bool = false, sayingWhatItSaw: Bool = false) throws
        -> (changed: Int, covers: VersionVector?, changedDocuments: [DocumentDelta], echoes: ClosedRange<Int64>?) {
        var batch = batch
        if stale, let covers = batch.covers, let floor = subscription(id)?.recoveryFloor, !floor.isEmpty {
            batch.covers = covers.lowered(below: floor)
        }
        var changed = 0
        var changedDocuments: [DocumentDelta] = []
        var echoes = EchoedStretch()
        let noting = options.lazyPushHold != nil
        try store.write { tx in
            for delta in batch.documents where try tx.merge(delta, sayingWhatItSaw: sayingWhatItSaw) {
                changed += 1
                if noting { changedDocuments.append(delta) }
                echoes.add(tx.changes.last, sent: delta)
            }
            if let position = batch.position {
                try tx.setSyncRecord(SyncRecords.ackedKey(peer: peer, id), SyncRecords.position(position))
            }
            guard let covers = batch.covers else { return }
            // Read in the transaction: merges for one subscription from two peers are serialised
            // by the store, so neither loses the other's knowledge.
            let key = SyncRecords.subscriptionKey(id)
            guard let record = try tx.syncRecord(key), var subscription = LocalSubscription(id: id, record: record) else { return }
            subscription.knowledge.formUnion(covers)
            try tx.setSyncRecord(key, subscription.record)
        }
        if let covers = batch.covers {
            state.withLock { $0.subscriptions[id]?.knowledge.formUnion(covers) }
        }
        let documents = batch.documents.count
        deliveryTally.withLock {
            $0.documents += documents
            $0.duplicates += documents - changed
        }
        return (changed, batch.covers, changedDocuments, echoes.positions)
    }

    /// An eviction takes documents away: every subscription whose documents they were notes
    /// them as missing, in the same transaction (so no claim it makes or vouches for covers
    /// them), and an active one asks connected peers for them again once the eviction commits.
    ///
    /// Changes to a document still missing (a write to it after the eviction, or part of it
    /// merged from a peer) lower the same floor: the store does not vouch for them either
    /// while it withholds the document.
    private func evicted(_ changes: [DocumentChange], in transaction: WriteTransaction) throws {
        let evictions = changes.compactMap { change in change.evicted.map { (change.key, $0) } }
        let partial = changes.compactMap { change in change.delta.map { (change.key, $0) } }
        let site = store.site
        var touched: [(subscription: LocalSubscription, evicted: Bool)] = []
        state.withLock { state in
            for (id, var subscription) in state.subscriptions {
                var matched = false, changed = false
                for (key, evicted) in evictions where subscription.mayHaveMatched(key, evicted) {
                    subscription.evicted(key, evicted, site: site)
                    matched = true
                }
                for (key, delta) in partial where subscription.missing[key] != nil && !delta.isEmpty {
                    changed = subscription.missing[key]!.lower(below: delta) || changed
                }
                guard matched || changed else { continue }
                state.subscriptions[id] = subscription
                touched.append((subscription, matched))
            }
        }
        if !touched.isEmpty { try withholdMissing(in: transaction) }
        for (subscription, evicted) in touched {
            try transaction.setSyncRecord(SyncRecords.subscriptionKey(subscription.id), subscription.record)
            guard evicted, subscription.active else { continue }
            options.log(.warning, """
                evicted documents match the active subscription \(subscription.query): peers send them back while it is \
                active, so they were asked for again. Cancel the subscription before evicting what it matches.
                """)
            reannounce.withLock { _ = $0.insert(subscription.id) }
        }
    }

    /// Documents this store evicted and has not got back whole (for any of its subscriptions).
    /// Sessions do not serve them: what the store holds of them now (a write made after the
    /// eviction, say) carries a version that names the evicted events, and a peer that took it
    /// would never be sent those.
    var withheld: Set<DocumentKey> {
        state.withLock { state in
            var keys = Set<DocumentKey>()
            for subscription in state.subscriptions.values { keys.formUnion(subscription.missing.keys) }
            return keys
        }
    }

    /// Whether this store's summaries of subscription `id` to `peer` are still to ask for its own
    /// events back, until the peer answers one: those a power cut may have taken
    /// (`Store.mayHaveLostCommits`), or those an eviction took for good as far as the peers
    /// asked then knew (`LocalSubscription.ownFloor`) — a peer met later may hold them.
    func asksForOwnEvents(from peer: String, _ id: UInt64) -> Bool {
        lacksOwnEvents(id) && !ownEventsAsked.withLock { $0.contains("\(peer)/\(id)") }
    }

    func ownEventsAnswered(from peer: String, _ id: UInt64) {
        guard lacksOwnEvents(id) else { return }
        ownEventsAsked.withLock { _ = $0.insert("\(peer)/\(id)") }
    }

    private func lacksOwnEvents(_ id: UInt64) -> Bool {
        store.mayHaveLostCommits || !(subscription(id)?.ownFloor.isEmpty ?? true)
    }

    /// Hands the store the documents missing now (`Store.withhold`), and relogs those no
    /// longer missing, so that readers and observers see them again in this transaction.
    private func withholdMissing(in transaction: WriteTransaction) throws {
        let before = store.withheldDocuments, now = withheld
        guard before != now else { return }
        store.withhold(now)
        for key in before.subtracting(now) { _ = try transaction.relog(key) }
    }

    private func subscriptions(stillMissing key: DocumentKey, except id: UInt64) -> Bool {
        state.withLock { $0.subscriptions.values.contains { $0.id != id && $0.missing[key] != nil } }
    }

    /// A peer answered a summary that asked for `keys` whole: they are no longer missing.
    func recovered(_ id: UInt64, keys: Set<DocumentKey>, vouched: VersionVector?, received: [DocumentKey: VersionVector]) {
        do {
            let site = store.site
            var lowered = false
            try store.write { tx in
                let key = SyncRecords.subscriptionKey(id)
                guard let record = try tx.syncRecord(key), var subscription = LocalSubscription(id: id, record: record) else { return }
                let before = (subscription.knowledge, subscription.ownFloor)
                subscription.recovered(keys, vouched: vouched, received: received, site: site)
                lowered = before != (subscription.knowledge, subscription.ownFloor)
                try tx.setSyncRecord(key, subscription.record)
                state.withLock { state in
                    state.subscriptions[id]?.missing = subscription.missing
                    state.subscriptions[id]?.knowledge = subscription.knowledge
                    state.subscriptions[id]?.ownFloor = subscription.ownFloor
                    if let floor = state.subscriptions[id]?.recoveryFloor {
                        state.subscriptions[id]?.recoveryFloor = floor.lowest(subscription.recoveryFloor)
                    }
                }
                // They were neither served nor shown while missing (see `withheld`): now
                // whole, they go to the end of the log, where every session meets them again,
                // and readers see them.
                try withholdMissing(in: tx)
            }
            // Some of the evicted events could not be got back: the subscription claims less
            // now, and peers must hear so (they go through their logs again for what it lacks).
            if lowered {
                for session in sessions { session.announce(id) }
            }
        } catch {
            options.log(.warning, "could not record that evicted documents of subscription \(id) came back: \(error)")
        }
    }

    // MARK: - Credentials passed on

    /// Of `writers`, those whose credentials the peer was not given yet; they count as given
    /// from now on. Kept across the peer's sessions (a credential is a few hundred bytes, and a
    /// peer keeps what it was given); forgotten when the peer turns out to have lost what it had.
    func credentialsToGive(_ writers: Set<SiteID>, to peer: String) -> Set<SiteID> {
        guard !writers.isEmpty else { return [] }
        return credentialsGiven.withLock { given in
            let new = writers.subtracting(given[peer, default: []])
            given[peer, default: []].formUnion(new)
            return new
        }
    }

    /// Passes `credentials` to every peer connected now that reads them (a revocation list just
    /// adopted, say; sessions that start later get `SyncOrigins.announcements`).
    public func pass(_ credentials: Credentials) {
        for session in sessions { session.pass(credentials) }
    }

    /// The peer lost what it had (its summary says so): it is given every credential again.
    func forgetCredentialsGiven(to peer: String) {
        _ = credentialsGiven.withLock { $0.removeValue(forKey: peer) }
    }

    // MARK: - Sessions

    /// Starts a session with the peer at the other end of `channel`; it runs until the channel
    /// closes or the peer breaks the protocol. With `pulling: false` this side only serves: it
    /// asks the peer for nothing (a one-way sync). `permissions` say what the peer may read and
    /// write (see `SyncPermissions`; the agent takes them from the peer's certificate).
    @discardableResult
    public func connect(
        _ channel: any SyncChannel, pulling: Bool = true, permissions: SyncPermissions = .all, continuing continuation: CodecContinuation? = nil
    ) -> SyncSession {
        let session = SyncSession(engine: self, channel: channel, pulling: pulling, permissions: permissions, continuing: continuation)
        let accepted = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.sessions[ObjectIdentifier(session)] = session
            return true
        }
        // A session the stopped engine refuses still runs, briefly: its channel is closed, so
        // it ends at once, and whoever waits for it hears so.
        if !accepted { channel.close() }
        session.start()
        return session
    }

    /// The sessions running now.
    public var sessions: [SyncSession] { state.withLock { Array($0.sessions.values) } }

    func ended(_ session: SyncSession) {
        _ = state.withLock { $0.sessions.removeValue(forKey: ObjectIdentifier(session)) }
        attachments.sessionEnded(session)
        progress.ended(ObjectIdentifier(session))
        // A subscription whose eager server this was is pushed eagerly by the lazy ones again.
        guard options.lazyPushHold != nil else { return }
        let left = sessions
        for id in activeSubscriptionIDs where !left.contains(where: { $0.pushesEagerly(id) }) {
            for other in left where other.lazyAsked.withLock({ $0.contains(id) }) {
                Task { await other.askEager(id) }
            }
        }
    }

    // MARK: - Lazy push

    /// Whether `session`'s server may be asked to push subscription `id` lazily: only while
    /// another session has it pushed eagerly (one eager path in always stays). Checked and
    /// marked under one lock, so two sessions that merge duplicates at once cannot both prune.
    func askLazy(_ id: UInt64, of session: SyncSession) -> Bool {
        lazyServing.withLock { _ in
            guard !session.lazyAsked.withLock({ $0.contains(id) }),
                  sessions.contains(where: { $0 !== session && $0.pushesEagerly(id) }) else { return false }
            session.lazyAsked.withLock { _ = $0.insert(id) }
            return true
        }
    }

    /// Whether `session` may push the peer's subscription `id` lazily: only while another
    /// session pushes the same collection eagerly (one eager path out of this store stays).
    /// Checked and taken under one lock, so two sessions asked at once cannot both go lazy.
    func takeLazy(_ id: UInt64, of query: SubscriptionQuery, for session: SyncSession) -> Bool {
        lazyServing.withLock { _ in
            let others = sessions.filter { $0 !== session }
            let eagerElsewhere = others.contains { other in
                other.eagerlyServed.withLock { served in
                    served.values.contains { $0 == nil || query.collection == nil || $0 == query.collection }
                }
            }
            if eagerElsewhere { session.eagerlyServed.withLock { _ = $0.removeValue(forKey: id) } }
            return eagerElsewhere
        }
    }

    /// A session merged `documents` (they changed the store): every other session whose
    /// server was asked to push lazily tells it so, so that it does not send them after its hold.
    func merged(_ documents: [DocumentVersion], apart session: SyncSession) {
        for other in sessions where other !== session && !other.lazyAsked.withLock({ $0.isEmpty }) {
            Task { await other.noteHas(documents) }
        }
    }

    private func storeChanged() {
        let ids = reannounce.withLock { ids -> [UInt64] in
            defer { ids.removeAll() }
            return ids.sorted()
        }
        for session in sessions {
            for id in ids { session.announce(id) }
            session.ring()
        }
    }

    /// Waits, at most `limit`, until every session has put on a link what it had to send; the
    /// sessions that had not by then. Before `stop()` on a clean shutdown.
    public func flush(within limit: Duration) async -> Int {
        let deadline = ContinuousClock.now + limit
        return await withTaskGroup(of: Bool.self) { group in
            for session in sessions { group.addTask { await session.flush(until: deadline) } }
            return await group.reduce(0) { $0 + ($1 ? 0 : 1) }
        }
    }

    /// Closes every session and stops taking new ones.
    public func stop() {
        let sessions = state.withLock { state -> [SyncSession] in
            state.stopped = true
            return Array(state.sessions.values)
        }
        for session in sessions { session.close(reason: "the engine stopped") }
        hooks.withLock { $0.forEach { $0.cancel() } }
    }

    /// Document deltas merged from every session so far, and those that brought nothing new.
    public var deliveries: SyncDeliveries { deliveryTally.withLock { $0 } }
    private let deliveryTally = Mutex(SyncDeliveries())

    /// Frames and bytes moved by the sessions that have ended (a session adds its figures when it ends).
    public var statistics: SyncStatistics { totals.withLock { $0 } }
    let totals = Mutex(SyncStatistics())

    /// What has moved up to now: `statistics` plus the running sessions' figures so far. A
    /// session that ends during the reading may be counted twice or not at all for a moment.
    public var statisticsSoFar: SyncStatistics {
        get async {
            var now = statistics
            for session in sessions { now.add(await session.statistics) }
            return now
        }
    }
}

/// How much a log line matters.
public enum SyncLogLevel: String, Sendable {
    case info, warning, error
}

/// A subscription this store holds. Cancel it to stop receiving its documents; the documents
/// already received stay. Cancel before evicting what it matches (see
/// `SyncEngine.registerSubscription`).
public final class SyncSubscription: Sendable {
    private weak let engine: SyncEngine?
    let id: UInt64
    public let query: SubscriptionQuery

    init(engine: SyncEngine, id: UInt64, query: SubscriptionQuery) {
        self.engine = engine
        self.id = id
        self.query = query
    }

    /// Stops asking peers for the query's documents; those already here stay. Evicting them
    /// afterwards does not bring them back; subscribing to the same query again asks for what
    /// is then missing, and nothing else.
    public func cancel() { engine?.cancelSubscription(id) }

    public var isCancelled: Bool { !(engine?.subscription(id)?.active ?? false) }
}

/// Frames and bytes a session (or all of an engine's sessions) sent and received.
public struct SyncStatistics: Sendable, Hashable {
    public var framesSent = 0, framesReceived = 0
    public var bytesSent = 0, bytesReceived = 0
    /// Documents merged that changed this store.
    public var documentsReceived = 0
    public var documentsSent = 0
    /// Documents of a peer's batches not merged because they carry its own writes to a
    /// collection it may not write (see `SyncPermissions`).
    public var documentsRefused = 0

    public init() {}

    mutating func add(_ other: SyncStatistics) {
        framesSent += other.framesSent
        framesReceived += other.framesReceived
        bytesSent += other.bytesSent
        bytesReceived += other.bytesReceived
        documentsReceived += other.documentsReceived
        documentsSent += other.documentsSent
        documentsRefused += other.documentsRefused
    }
}

