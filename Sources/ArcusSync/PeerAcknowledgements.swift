import ArcusCRDT
import ArcusStore
import Synchronization

/// How far a peer has acknowledged this store's change log for one subscription of its that
/// this store serves: it has merged every change up to `position` that `query` matches (or
/// was known to have it already).
public struct PeerAcknowledgement: Sendable, Equatable {
    public var subscriptionID: UInt64
    public var query: SubscriptionQuery
    public var position: Int64
}

/// Whether a peer holds a write, as `SyncEngine.peer(_:holding:)` tells.
public enum PeerHolding: Sendable, Equatable {
    /// It has acknowledged every document's current state.
    case holds
    /// It subscribes to the document but has acknowledged the log only up to `acknowledged`;
    /// the document's row is at `needed`.
    case behind(DocumentKey, acknowledged: Int64, needed: Int64)
    /// None of its subscriptions (as this store serves them) matches the document: it will not
    /// get it from this store.
    case notSubscribed(DocumentKey)
    /// This store has never served it (no session between them, or it subscribes to nothing):
    /// it may hold the write through other peers, but that cannot be told from here.
    case neverServed
}

/// The acknowledgements sessions report as they move, per peer (its key: the hex of its hello's
/// peer id) and subscription. The latest report stands: a peer that lost data acknowledges less.
final class PeerAcknowledgements: Sendable {
    private struct Key: Hashable {
        let peer: String
        let subscription: UInt64
    }

    private let entries = Mutex<[Key: PeerAcknowledgement]>([:])

    func record(peer: String, _ acknowledgement: PeerAcknowledgement) {
        entries.withLock { $0[Key(peer: peer, subscription: acknowledgement.subscriptionID)] = acknowledgement }
    }

    func of(_ peer: String) -> [PeerAcknowledgement] {
        entries.withLock { $0.filter { $0.key.peer == peer }.map(\.value) }
    }
}

extension SyncEngine {
    /// What `peer` (its key: the hex of its hello's peer id) has acknowledged of each of its
    /// subscriptions this store serves: as its sessions reported, else as the records of
    /// earlier ones (from before a restart) say. By subscription id.
    public func acknowledgements(of peer: String) -> [PeerAcknowledgement] {
        acknowledgements(of: peer, records: (try? store.syncRecords(prefix: Self.servedRecordPrefix(peer))) ?? [])
    }

    /// The prefix of the sync records that say what `peer` acknowledged.
    public static func servedRecordPrefix(_ peer: String) -> String { String(SyncRecords.servedKey(peer: peer, 0).dropLast()) }

    /// `acknowledgements(of:)` with the records (`servedRecordPrefix`) already read: for a reader
    /// inside a read of the store, which must not start another.
    public func acknowledgements(of peer: String, records: [(key: String, value: [UInt8])]) -> [PeerAcknowledgement] {
        var byID: [UInt64: PeerAcknowledgement] = [:]
        let prefix = Self.servedRecordPrefix(peer)
        for (key, bytes) in records where key.hasPrefix(prefix) {
            guard let id = UInt64(key.dropFirst(prefix.count)), let served = ServedSubscription(id: id, record: bytes) else { continue }
            byID[id] = PeerAcknowledgement(subscriptionID: id, query: served.query, position: served.acknowledged)
        }
        for reported in acknowledgements.of(peer) { byID[reported.subscriptionID] = reported }
        return byID.values.sorted { $0.subscriptionID < $1.subscriptionID }
    }

    /// Whether `peer` holds the current state of each of `keys` (the documents a write changed,
    /// `QueryResult.writtenDocuments`): some subscription of its that matches the document has
    /// acknowledged the log up to where the document's row is now. A row only moves up the log,
    /// and its state then includes the earlier one, so this holds for the write too. A document
    /// no longer in the store (evicted) is not waited for.
    public func peer(_ peer: String, holding keys: [DocumentKey]) throws -> PeerHolding {
        let acknowledged = acknowledgements(of: peer)
        let documents = try store.loggedDocuments(keys)
        if acknowledged.isEmpty, !documents.isEmpty { return .neverServed }
        for document in documents {
            let value = document.value
            let matching = acknowledged.filter { acknowledgement in
                if let value { return acknowledgement.query.matches(collection: document.key.collection, value: value) }
                // A removal goes to every subscriber of the collection.
                return acknowledgement.query.collection == nil || acknowledgement.query.collection == document.key.collection
            }
            guard let furthest = matching.map(\.position).max() else { return .notSubscribed(document.key) }
            if furthest < document.sequence { return .behind(document.key, acknowledged: furthest, needed: document.sequence) }
        }
        return .holds
    }
}
