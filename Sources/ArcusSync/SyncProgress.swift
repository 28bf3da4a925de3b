import ArcusCodec
import Foundation
import Synchronization

/// How far one peer's answer to a subscription has come: what arrived since this side last
/// told the peer what it has (the start of a sync, or of a catch-up after a reconnect), and
/// what the peer says is still to come (`SyncBacklog`).
public struct SubscriptionSyncProgress: Sendable, Equatable {
    public var subscriptionID: UInt64
    /// The peer's id (hex) and how logs name it.
    public var peerID: String
    public var peer: String
    public var documentsReceived = 0
    /// Frame bytes of the batches received.
    public var bytesReceived = 0
    /// What the peer said was still to come with its latest batch; nil until it said (and
    /// always from a peer too old to say).
    public var backlog: SyncBacklog?
    /// Whether the peer has answered in full: this side has everything it had as of then.
    public var caughtUp = false
    /// When this side asked (seconds since 1970).
    public var startedAt: Double

    /// Done so far, from 0 to 1, by bytes when the peer estimated them and by documents
    /// otherwise; nil while the peer has not said what is left.
    public var fraction: Double? {
        if caughtUp { return 1 }
        guard let backlog else { return nil }
        if backlog.bytes > 0 || bytesReceived > 0 {
            let total = Double(bytesReceived) + Double(backlog.bytes)
            return total == 0 ? 1 : Double(bytesReceived) / total
        }
        let total = Double(documentsReceived) + Double(backlog.documents)
        return total == 0 ? 1 : Double(documentsReceived) / total
    }
}

/// The progress of every subscription's sync with every connected peer, as sessions report it.
final class SyncProgressTracker: Sendable {
    private struct Key: Hashable {
        let subscription: UInt64
        let session: ObjectIdentifier
    }

    private let entries = Mutex<[Key: SubscriptionSyncProgress]>([:])
    /// When a batch last came from each peer (by its key), whatever session brought it: kept
    /// after the session ends.
    private let lastReceived = Mutex<[String: Double]>([:])

    /// When a batch last came from `peer` (seconds since 1970), if one ever did since the start.
    func lastReceived(from peer: String) -> Double? { lastReceived.withLock { $0[peer] } }

    /// This side told the peer what it has of the subscription: a sync begins.
    func started(_ subscription: UInt64, session: ObjectIdentifier, peerID: String, peer: String) {
        entries.withLock {
            $0[Key(subscription: subscription, session: session)] = SubscriptionSyncProgress(
                subscriptionID: subscription, peerID: peerID, peer: peer, startedAt: Date().timeIntervalSince1970)
        }
    }

    func received(_ batch: DeltaBatch, bytes: Int, session: ObjectIdentifier) {
        entries.withLock { entries in
            let key = Key(subscription: batch.subscriptionID, session: session)
            guard var progress = entries[key] else { return }
            let now = Date().timeIntervalSince1970
            lastReceived.withLock { $0[progress.peerID] = now }
            progress.documentsReceived += batch.documents.count
            progress.bytesReceived += bytes
            if let backlog = batch.backlog { progress.backlog = backlog }
            entries[key] = progress
        }
    }

    func caughtUp(_ subscription: UInt64, session: ObjectIdentifier) {
        entries.withLock { entries in
            let key = Key(subscription: subscription, session: session)
            entries[key]?.caughtUp = true
            if entries[key]?.backlog != nil { entries[key]?.backlog = SyncBacklog.none }
        }
    }

    func withdrawn(_ subscription: UInt64, session: ObjectIdentifier) {
        _ = entries.withLock { $0.removeValue(forKey: Key(subscription: subscription, session: session)) }
    }

    func ended(_ session: ObjectIdentifier) {
        entries.withLock { entries in entries = entries.filter { $0.key.session != session } }
    }

    var snapshot: [SubscriptionSyncProgress] {
        entries.withLock { Array($0.values) }.sorted { ($0.subscriptionID, $0.peer) < ($1.subscriptionID, $1.peer) }
    }
}

extension SyncEngine {
    /// Each active subscription's sync with each connected peer: what arrived since it began,
    /// what the peer says is left, whether it is caught up. By subscription, then peer.
    public var syncProgress: [SubscriptionSyncProgress] { progress.snapshot }

    /// When a batch of documents last came from `peer` (its key), in seconds since 1970.
    public func lastReceived(from peer: String) -> Double? { progress.lastReceived(from: peer) }
}
