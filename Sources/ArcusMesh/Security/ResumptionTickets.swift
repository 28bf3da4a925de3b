import Foundation
import Synchronization

/// The tickets one peer holds, one per peer it has a chain with. Either end of a chain may dial
/// with its ticket; taking a ticket removes it, so it is never used twice, and two links resuming
/// at once leave one of them to the full handshake.
public final class ResumptionTickets: Sendable {
    public let policy: ResumptionPolicy
    private let state = Mutex(Store())

    private struct Store {
        var byPeer: [PeerID: ResumptionTicket] = [:]
        var peerByID: [[UInt8]: PeerID] = [:]
        /// Peers in the order their tickets were stored, for dropping the oldest.
        var order: [PeerID] = []
    }

    public init(policy: ResumptionPolicy = ResumptionPolicy()) {
        self.policy = policy
    }

    /// How many peers this side holds a ticket for.
    public var count: Int { state.withLock { $0.byPeer.count } }

    /// Whether a link to `peer` could resume now.
    public func canResume(with peer: PeerID, at date: Date = Date()) -> Bool {
        state.withLock { $0.byPeer[peer] }.map { policy.allows($0, at: date) } ?? false
    }

    /// Forgets every ticket: the next link to anyone runs the full handshake.
    public func removeAll() {
        state.withLock { $0 = Store() }
    }

    /// Keeps `ticket`, replacing the one held for its peer.
    func store(_ ticket: ResumptionTicket) {
        guard policy.maximumPeers > 0 else { return }
        state.withLock { store in
            let peer = ticket.peer.peerID
            Self.remove(peer, from: &store)
            while store.order.count >= policy.maximumPeers, let oldest = store.order.first { Self.remove(oldest, from: &store) }
            store.byPeer[peer] = ticket
            store.peerByID[ticket.id] = peer
            store.order.append(peer)
        }
    }

    /// The ticket for `peer`, removed, if the policy still allows it.
    func take(for peer: PeerID, at date: Date) -> ResumptionTicket? {
        let ticket = state.withLock { store in
            let ticket = store.byPeer[peer]
            Self.remove(peer, from: &store)
            return ticket
        }
        return ticket.flatMap { policy.allows($0, at: date) ? $0 : nil }
    }

    /// The ticket named `id`, removed, if the policy still allows it.
    func take(id: [UInt8], at date: Date) -> ResumptionTicket? {
        let ticket: ResumptionTicket? = state.withLock { store in
            guard let peer = store.peerByID[id] else { return nil }
            let ticket = store.byPeer[peer]
            Self.remove(peer, from: &store)
            return ticket
        }
        return ticket.flatMap { policy.allows($0, at: date) ? $0 : nil }
    }

    private static func remove(_ peer: PeerID, from store: inout Store) {
        guard let ticket = store.byPeer.removeValue(forKey: peer) else { return }
        store.peerByID[ticket.id] = nil
        store.order.removeAll { $0 == peer }
    }
}
