import ArcusCRDT
import ArcusCodec
import ArcusStore

/// The records the sync engine keeps in its store (`Store.syncRecord`), as JSON text.
///
/// - `sub/<id>`: one of this store's subscriptions, active or cancelled (its knowledge is kept,
///   so subscribing again resumes instead of starting over).
/// - `told/<peer>/<id>`: what a peer knows this store has of a subscription (its
///   last summary and the claims the peer sent back), and that knowledge's time for this
///   store's own events (8 bytes each).
/// - `peer/<peer>/<id>`: a peer's subscription as this store serves it: the query, the log
///   position the peer has acknowledged, and the knowledge it last summarised.
/// - `acked/<peer>/<id>`: the position of the peer's change log up to which this store merged
///   what the peer sent for subscription `id`, written with the merge (so a store restored
///   from a backup says where it really is).
enum SyncRecords {
    static func subscriptionKey(_ id: UInt64) -> String { "sub/\(id)" }
    static func toldKey(peer: String, _ id: UInt64) -> String { "told/\(peer)/\(id)" }
    static func servedKey(peer: String, _ id: UInt64) -> String { "peer/\(peer)/\(id)" }
    static func ackedKey(peer: String, _ id: UInt64) -> String { "acked/\(peer)/\(id)" }

    static func position(_ position: UInt64) -> [UInt8] { Array(String(position).utf8) }
    static func position(_ record: [UInt8]?) -> UInt64? { record.flatMap { UInt64(String(decoding: $0, as: UTF8.self)) } }

    static func encode(_ value: Value) -> [UInt8] { Array(value.jsonString.utf8) }

    /// A `told/` record: the knowledge a peer was last told this store has (so the next summary
    /// can say "that, and these newer entries").
    static func told(_ knowledge: VersionVector) -> [UInt8] { encode(version(knowledge)) }

    static func told(_ record: [UInt8]) -> VersionVector? {
        guard case .array? = try? Value(jsonBytes: record) else { return nil }
        return version(try? Value(jsonBytes: record))
    }

    static func decode(_ bytes: [UInt8]) -> [String: Value]? {
        guard case .object(let fields)? = try? Value(jsonBytes: bytes) else { return nil }
        return fields
    }

    static func version(_ vector: VersionVector) -> Value {
        .array(vector.elements.map { .array([.int(Int64(bitPattern: $0.site.rawValue)), .int(Int64(bitPattern: $0.time.rawValue))]) })
    }

    static func version(_ value: Value?) -> VersionVector {
        guard case .array(let items)? = value else { return VersionVector() }
        var vector = VersionVector()
        for case .array(let pair) in items where pair.count == 2 {
            guard case .int(let site) = pair[0], case .int(let time) = pair[1] else { continue }
            vector.observe(Stamp(time: Timestamp(rawValue: UInt64(bitPattern: time)), site: SiteID(UInt64(bitPattern: site))))
        }
        return vector
    }
}

/// A document this store evicted while one of its subscriptions matched it: peers are asked
/// for it whole (by key) instead of being told the store has less of everything.
struct MissingDocument: Sendable, Equatable {
    /// The earliest and the latest event of each site in the state that was evicted.
    var earliest: VersionVector
    var latest: VersionVector
    /// Answers that sent the document back without all its evicted events.
    var shortAnswers = 0

    /// After this many such answers the events they lacked are taken as lost for good: the
    /// document is served again (its version names them; no peer has them to send).
    static let shortAnswerLimit = 3

    init(_ state: DocumentState) {
        earliest = state.earliestEvents
        latest = state.eventVersion
    }

    init(earliest: VersionVector, latest: VersionVector, shortAnswers: Int = 0) {
        self.earliest = earliest
        self.latest = latest
        self.shortAnswers = shortAnswers
    }

    /// Takes in the events of a change to the document while it is missing: the store holds
    /// them but does not pass them on, so it must not vouch for them. Returns whether the floor
    /// moved.
    mutating func lower(below delta: DocumentState) -> Bool {
        var floor = earliest.entries
        var moved = false
        delta.forEachEvent { stamp in
            if let time = floor[stamp.site], time <= stamp.time { return }
            floor[stamp.site] = stamp.time
            moved = true
        }
        if moved { earliest = VersionVector(floor) }
        return moved
    }

    /// Both evictions' events: a document evicted, partly brought back, and evicted again.
    func merged(with other: MissingDocument) -> MissingDocument {
        var earliest = self.earliest.entries
        for element in other.earliest.elements {
            earliest[element.site] = min(earliest[element.site] ?? element.time, element.time)
        }
        return MissingDocument(earliest: VersionVector(earliest), latest: latest.union(other.latest), shortAnswers: 0)
    }
}

/// One of this store's subscriptions: what it asks peers for, and what it has of it.
struct LocalSubscription: Sendable {
    let id: UInt64
    let query: SubscriptionQuery
    var active: Bool
    /// Events of the documents the query matches that this store holds, per site, as peers'
    /// complete batches vouched for them. This store's own events are added when it is used.
    var knowledge: VersionVector
    /// Evictions lower what may be claimed of this store's own events: the earliest own event
    /// an eviction took away for good, per site (this store's site only).
    var ownFloor: VersionVector
    /// Documents evicted while the query matched them, until a peer has answered a summary that
    /// asked for them by key.
    var missing: [DocumentKey: MissingDocument]

    /// Where claims were lowered because evicted events could not be got back (in memory
    /// only): batches that peers produced before they heard of the eviction may vouch for them,
    /// and their `covers` are held below this.
    var recoveryFloor = VersionVector()
    /// Evictions of the subscription's documents so far (in memory only): a session whose
    /// latest summary predates one may still be sent claims that include them.
    var evictions: UInt64 = 0

    /// Beyond this many missing documents, an eviction lowers `knowledge` instead (costing a
    /// rescan by each peer, but keeping records and summaries small). The most keys a `missing`
    /// message may carry (the codec refuses more before decoding them).
    static let missingLimit = CodecLimits.standard.maximumMissingKeys

    var record: [UInt8] {
        SyncRecords.encode(.object([
            "query": .string(query.text), "arguments": .object(query.arguments), "active": .bool(active),
            "knowledge": SyncRecords.version(knowledge), "ownFloor": SyncRecords.version(ownFloor),
            "missing": .array(missing.keys.sorted().map { key in
                let document = missing[key]!
                return .array([.string(key.collection), key.id, SyncRecords.version(document.earliest), SyncRecords.version(document.latest),
                               .int(Int64(document.shortAnswers))])
            }),
        ]))
    }

    init(id: UInt64, query: SubscriptionQuery, active: Bool, knowledge: VersionVector = VersionVector(),
         ownFloor: VersionVector = VersionVector(), missing: [DocumentKey: MissingDocument] = [:]) {
        self.id = id
        self.query = query
        self.active = active
        self.knowledge = knowledge
        self.ownFloor = ownFloor
        self.missing = missing
    }

    init?(id: UInt64, record: [UInt8]) {
        guard let fields = SyncRecords.decode(record), case .string(let text)? = fields["query"],
            case .object(let arguments)? = fields["arguments"] ?? .object([:]),
            let query = try? SubscriptionQuery(text, arguments: arguments)
        else { return nil }
        let active: Bool
        if case .bool(let flag)? = fields["active"] { active = flag } else { active = true }
        var missing: [DocumentKey: MissingDocument] = [:]
        if case .array(let items)? = fields["missing"] {
            for case .array(let parts) in items where parts.count >= 4 {
                guard case .string(let collection) = parts[0] else { continue }
                var shortAnswers = 0
                if parts.count > 4, case .int(let count) = parts[4] { shortAnswers = Int(clamping: count) }
                missing[DocumentKey(collection: collection, id: parts[1])] =
                    MissingDocument(earliest: SyncRecords.version(parts[2]), latest: SyncRecords.version(parts[3]), shortAnswers: shortAnswers)
            }
        }
        self.init(id: id, query: query, active: active, knowledge: SyncRecords.version(fields["knowledge"]),
                  ownFloor: SyncRecords.version(fields["ownFloor"]), missing: missing)
    }

    /// What this store says it has of the query's documents in its summaries: what peers
    /// vouched for and its own events up to `ownTime`, below what evictions took away for
    /// good. Documents in `missing` are the exception, named next to the summary.
    func claim(site: SiteID, ownTime: Timestamp?) -> VersionVector {
        var claim = knowledge
        if let ownTime { claim.observe(Stamp(time: ownTime, site: site)) }
        return claim.lowered(below: ownFloor)
    }

    /// What this store vouches for when it serves the query to others: its claim and its own
    /// events up to `localTime`, below the earliest events of the documents it is missing (it
    /// cannot pass on what it lacks).
    func vouch(site: SiteID, localTime: Timestamp?) -> VersionVector {
        var vouch = knowledge
        if let localTime { vouch.observe(Stamp(time: localTime, site: site)) }
        vouch = vouch.lowered(below: ownFloor)
        guard !missing.isEmpty else { return vouch }
        var floor: [SiteID: Timestamp] = [:]
        for document in missing.values {
            for element in document.earliest.elements {
                floor[element.site] = min(floor[element.site] ?? element.time, element.time)
            }
        }
        return vouch.lowered(below: VersionVector(floor))
    }

    /// Notes an eviction of a document the subscription may have matched.
    mutating func evicted(_ key: DocumentKey, _ state: DocumentState, site: SiteID) {
        evictions &+= 1
        let document = MissingDocument(state)
        missing[key] = missing[key].map { $0.merged(with: document) } ?? document
        guard missing.count > Self.missingLimit else { return }
        // Too many to name: claim less of everything instead, and let peers rescan.
        for document in missing.values { stopClaiming(from: document.earliest, site: site) }
        missing.removeAll()
    }

    /// A peer answered a summary that asked for `keys` whole, vouching for `vouched` (nil: for
    /// nothing); of them it sent `received`, each with the version the peer has of it (a peer
    /// never serves a document it holds only part of, so that version is all it has seen of
    /// the document, and here now). A document whose evicted events the peer vouched for, in
    /// general or in the version it sent, is whole again: no longer missing. Otherwise some of its events may be lacking: the
    /// subscription stops claiming them (a site's events later than what the peer vouched for)
    /// and keeps asking for the document — which stays withheld, since its version names events
    /// it lacks — until an answer brings them, or `shortAnswerLimit` answers that sent it
    /// without them say no peer has them.
    mutating func recovered(_ keys: Set<DocumentKey>, vouched: VersionVector?, received: [DocumentKey: VersionVector], site: SiteID) {
        for key in keys {
            guard var document = missing[key] else { continue }
            let sent = received[key]
            var limits: [SiteID: Timestamp] = [:]
            for element in document.earliest.elements {
                // Sites with no evicted event only wrote to it since: those events are here.
                guard let latest = document.latest[element.site] else { continue }
                if let vouched = vouched?[element.site], vouched >= latest { continue }
                if let seen = sent?[element.site], seen >= latest { continue }
                // The first event of the site that may be missing.
                var limit = element.time
                if let vouched = vouched?[element.site], vouched >= limit { limit = Timestamp(rawValue: vouched.rawValue &+ 1) }
                limits[element.site] = limit
            }
            guard !limits.isEmpty else {
                missing[key] = nil
                continue
            }
            stopClaiming(from: VersionVector(limits), site: site)
            if sent != nil { document.shortAnswers += 1 }
            missing[key] = document.shortAnswers >= MissingDocument.shortAnswerLimit ? nil : document
        }
    }

    /// Lowers what the subscription claims of another site to what the store holds of it
    /// (`held`), where the claim names events past `bound` (no peer could have vouched for them
    /// since remote clocks are bounded: they came from a poisoned clock) or the site is one of
    /// `sites` (those whose events the store's clock repair dropped, `ClockPoisoningRecovery`).
    /// Such a claim would keep peers from sending that site's real writes. This store's own site
    /// is left alone: its claim follows its clock. Returns whether anything was lowered.
    mutating func lowerClaims(beyond bound: Timestamp, of sites: Set<SiteID>, held: VersionVector, site own: SiteID) -> Bool {
        var limits: [SiteID: Timestamp] = [:]
        for element in knowledge.elements where element.site != own && (element.time > bound || sites.contains(element.site)) {
            // Nothing held of the site: claim none of it (a limit of zero drops the entry).
            guard let held = held[element.site] else {
                limits[element.site] = .zero
                continue
            }
            let kept = min(held, bound)
            guard element.time > kept else { continue }
            limits[element.site] = Timestamp(rawValue: kept.rawValue + 1)
        }
        guard !limits.isEmpty else { return false }
        stopClaiming(from: VersionVector(limits), site: own)
        return true
    }

    /// Stops claiming each site's events from the time given on.
    private mutating func stopClaiming(from limits: VersionVector, site: SiteID) {
        knowledge = knowledge.lowered(below: limits)
        recoveryFloor = recoveryFloor.lowest(limits)
        if let own = limits[site] {
            var floor = ownFloor.entries
            floor[site] = min(own, floor[site] ?? own)
            ownFloor = VersionVector(floor)
        }
    }
}

extension VersionVector {
    /// Per site, the lower of the two times; a site in one only keeps its time.
    func lowest(_ other: VersionVector) -> VersionVector {
        var entries = self.entries
        for element in other.elements { entries[element.site] = min(entries[element.site] ?? element.time, element.time) }
        return VersionVector(entries)
    }
}

extension LocalSubscription {
    /// Whether the document may be one of this subscription's: it matches, or it is removed
    /// (no value left to test) and of the subscription's collection.
    func mayHaveMatched(_ key: DocumentKey, _ state: DocumentState) -> Bool {
        if let value = state.document(id: key.id) { return query.matches(collection: key.collection, value: value) }
        return query.collection == nil || query.collection == key.collection
    }
}
