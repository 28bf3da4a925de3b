import ArcusCRDT
import ArcusStore

/// The records the sync engine keeps in its store (`Store.syncRecord`), as JSON text.
///
/// - `sub/<id>`: one of this store's subscriptions, active or cancelled (its knowledge is kept,
///   so subscribing again resumes instead of starting over).
/// - `told/<peer>/<id>`: the digest of the knowledge last sent in full to a peer.
/// - `peer/<peer>/<id>`: a peer's subscription as this store serves it: the query, the log
///   position the peer has acknowledged, and the knowledge it last summarised.
enum SyncRecords {
    static func subscriptionKey(_ id: UInt64) -> String { "sub/\(id)" }
    static func toldKey(peer: String, _ id: UInt64) -> String { "told/\(peer)/\(id)" }
    static func servedKey(peer: String, _ id: UInt64) -> String { "peer/\(peer)/\(id)" }

    static func encode(_ value: Value) -> [UInt8] { Array(value.jsonString.utf8) }

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

/// One of this store's subscriptions: what it asks peers for, and what it has of it.
struct LocalSubscription: Sendable {
    let id: UInt64
    let query: SubscriptionQuery
    var active: Bool
    /// Events of the documents the query matches that this store holds, per site, as peers'
    /// complete batches vouched for them. This store's own events are added when it is used.
    var knowledge: VersionVector
    /// Evictions lower what may be claimed of this store's own events: the earliest own event
    /// an eviction took away, per site (this store's site only).
    var ownFloor: VersionVector

    var record: [UInt8] {
        SyncRecords.encode(.object([
            "query": .string(query.text), "arguments": .object(query.arguments), "active": .bool(active),
            "knowledge": SyncRecords.version(knowledge), "ownFloor": SyncRecords.version(ownFloor),
        ]))
    }

    init(id: UInt64, query: SubscriptionQuery, active: Bool, knowledge: VersionVector = VersionVector(), ownFloor: VersionVector = VersionVector()) {
        self.id = id
        self.query = query
        self.active = active
        self.knowledge = knowledge
        self.ownFloor = ownFloor
    }

    init?(id: UInt64, record: [UInt8]) {
        guard let fields = SyncRecords.decode(record), case .string(let text)? = fields["query"],
            case .object(let arguments)? = fields["arguments"] ?? .object([:]),
            let query = try? SubscriptionQuery(text, arguments: arguments)
        else { return nil }
        let active: Bool
        if case .bool(let flag)? = fields["active"] { active = flag } else { active = true }
        self.init(id: id, query: query, active: active, knowledge: SyncRecords.version(fields["knowledge"]),
                  ownFloor: SyncRecords.version(fields["ownFloor"]))
    }

    /// What this store may say it has of the query's documents: its knowledge and its own
    /// events up to `localTime`, below what evictions took away.
    func claim(site: SiteID, localTime: Timestamp?) -> VersionVector {
        var claim = knowledge
        if let localTime { claim.observe(Stamp(time: localTime, site: site)) }
        return claim.lowered(below: ownFloor)
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
