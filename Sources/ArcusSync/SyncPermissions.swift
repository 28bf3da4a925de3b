import ArcusCodec
import ArcusStore

/// What one peer may do with this store's collections over a session: which collections it may
/// read (be sent documents of) and which it may write (have its own changes merged).
///
/// The engine enforces them per session (`SyncEngine.connect(_:pulling:permissions:)`):
/// - **Read**: no document (nor removal) of a collection the peer may not read is sent to it; a
///   subscription to such a collection is refused with `SyncErrorCode.notPermitted`; a
///   subscription to the whole store is served only what it may read, and this side vouches
///   for nothing with it (its `covers` would name the events withheld); an attachment is served
///   only when a document of a readable collection references it.
/// - **Write**: a document in a batch that carries events of the peer's own site (writes the
///   peer made itself) in a collection it may not write is refused — not merged, logged as a
///   warning, counted in `SyncStatistics.documentsRefused` — and the rest of the batch is merged.
///   Events of other sites are relayed whatever the collection (the peer passes on what it
///   received), which is what multi-hop needs.
///
/// `.all` (the default) permits everything. Certificates carry the same lists (ArcusMesh's
/// `CollectionPermissions`); the agent passes them on as they are.
public struct SyncPermissions: Sendable, Equatable, CustomStringConvertible {
    /// Every collection, or those named: the same sets certificates carry.
    public typealias Collections = CollectionSet

    public var read: Collections
    public var write: Collections

    public init(read: Collections = .all, write: Collections = .all) {
        self.read = read
        self.write = write
    }

    /// Everything: what every session had before permissions existed.
    public static let all = SyncPermissions()

    /// Whether the peer may read every document a subscription to `query` can match: one whole
    /// collection it may read, or the whole store when it may read everything.
    func mayReadAll(of query: SubscriptionQuery) -> Bool {
        if let collection = query.collection { return read.contains(collection) }
        return read == .all
    }

    public var description: String { "read \(read), write \(write)" }
}
