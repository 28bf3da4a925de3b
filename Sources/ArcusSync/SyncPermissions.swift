import ArcusCodec
import ArcusStore

/// What one peer may do with this store's collections over a session: which collections it may
/// read (be sent documents of), which it may write (have its own changes merged), and whether it
/// may pass on other writers' changes (relay).
///
/// The engine enforces them per session (`SyncEngine.connect(_:pulling:permissions:)`):
/// - **Read**: no document (nor removal) of a collection the peer may not read is sent to it; a
///   subscription to such a collection is refused with `SyncErrorCode.notPermitted`; a
///   subscription to the whole store is served only what it may read, and this side vouches
///   for nothing with it (its `covers` would name the events withheld); an attachment is served
///   only when a document of a readable collection references it.
/// - **Write**: the peer's own events (its site is its identity) are merged only in collections
///   it may write.
/// - **Relay**: other writers' events are merged from the peer only when it may relay, and only
///   where their writer may write (`SyncOrigins`). What is refused is left out of the merge —
///   the rest of the document and of the batch merges — logged and counted in
///   `SyncStatistics.documentsRefused`; the session goes on.
///
/// `.all` (the default) permits everything. Certificates carry the same lists (ArcusMesh's
/// `CollectionPermissions`) and the relay role; the agent passes them on as they are.
public struct SyncPermissions: Sendable, Equatable, CustomStringConvertible {
    /// Every collection, or those named: the same sets certificates carry.
    public typealias Collections = CollectionSet

    public var read: Collections
    public var write: Collections
    /// Whether the peer may pass on other writers' events (multi-hop through it).
    public var relay: Bool

    public init(read: Collections = .all, write: Collections = .all, relay: Bool = true) {
        self.read = read
        self.write = write
        self.relay = relay
    }

    /// Everything: what every session had before permissions existed.
    public static let all = SyncPermissions()

    /// Whether the peer may read every document a subscription to `query` can match: one whole
    /// collection it may read, or the whole store when it may read everything.
    func mayReadAll(of query: SubscriptionQuery) -> Bool {
        if let collection = query.collection { return read.contains(collection) }
        return read == .all
    }

    public var description: String { "read \(read), write \(write)\(relay ? ", relay" : "")" }
}
