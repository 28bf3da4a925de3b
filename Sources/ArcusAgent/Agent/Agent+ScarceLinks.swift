import ArcusMesh
import Synchronization

extension LinkKind {
    /// Whether this kind's links are few: a Bluetooth controller holds a handful of connections.
    var isScarce: Bool { self == .bluetooth }
}

/// The peers a scarce transport has announced and not lost, with an advertised id; what
/// `Agent.holdScarceLinks` plans from.
final class ScarcePeersInRange: Sendable {
    private let endpoints = Mutex<[PeerID: TransportEndpoint]>([:])

    func appeared(_ endpoint: TransportEndpoint) {
        guard let peer = endpoint.peer else { return }
        endpoints.withLock { $0[peer] = endpoint }
    }

    func lost(_ endpoint: TransportEndpoint) {
        guard let peer = endpoint.peer else { return }
        endpoints.withLock { $0[peer] = nil }
    }

    var current: [PeerID: TransportEndpoint] { endpoints.withLock { $0 } }
}

extension Agent {
    /// Keeps a scarce transport's links within `configuration.scarceLinks` (`ScarceLinkBudget`):
    /// every `scarceLinkTick` it looks at the links held and the peers in range, dials what the plan
    /// says and releases what it says. Accepted links are held to the limit in `admit`.
    func holdScarceLinks(_ transport: any Transport, inRange: ScarcePeersInRange) async {
        let budget = configuration.scarceLinks
        var lastRotation = ContinuousClock.now
        // A peer released by rotation waits a full interval before it is dialled again.
        var releasedAt: [PeerID: ContinuousClock.Instant] = [:]
        // When each peer was last seen linked: rotation goes to those linked longest ago.
        var lastLinked: [PeerID: ContinuousClock.Instant] = [:]
        while !Task.isCancelled {
            let now = ContinuousClock.now
            releasedAt = releasedAt.filter { now - $0.value < budget.rotationInterval }
            let (linked, otherwise) = await scarceLinks(of: transport.kind)
            for link in linked { lastLinked[link.peer] = now }
            // Every peer in range, lower ids too: with few links, waiting for the other side to
            // dial can leave islands that never meet (the highest ids filling each other's slots).
            // If both dial at once, the multiplexer keeps one link.
            let candidates = inRange.current.keys
                .filter { releasedAt[$0] == nil }
                .map { ScarceLinkBudget.Candidate(peer: $0, reachedOtherwise: otherwise.contains($0), lastLinked: lastLinked[$0]) }
            let plan = budget.plan(linked: linked, candidates: candidates, now: now, lastRotation: lastRotation)
            if plan.rotates { lastRotation = now }
            for peer in plan.drop {
                logger.debug("releasing a link to make room", metadata: ["peer": "\(peer)", "transport": "\(transport.kind.rawValue)"])
                releasedAt[peer] = now
                await multiplexer.session(with: peer).release(linksOf: transport.kind)
            }
            for peer in plan.dial {
                guard let endpoint = inRange.current[peer] else { continue }
                do {
                    let link = try await transport.open(to: endpoint)
                    await admit(link, as: .initiator, from: endpoint)
                } catch {
                    logger.debug("could not dial", metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
                }
            }
            try? await Task.sleep(for: Self.scarceLinkTick)
        }
    }

    /// How often the scarce-link plan is looked at.
    static var scarceLinkTick: Duration { .milliseconds(500) }

    /// The peers linked on `kind` now (with when and whether also otherwise), and every peer
    /// linked by some other kind.
    func scarceLinks(of kind: LinkKind) async -> (linked: [ScarceLinkBudget.Linked], otherwise: Set<PeerID>) {
        var linked: [ScarceLinkBudget.Linked] = []
        var otherwise: Set<PeerID> = []
        for session in await multiplexer.allSessions {
            let statuses = await session.linkStatuses
            let other = statuses.contains { $0.kind != kind }
            if other { otherwise.insert(session.peer) }
            if let oldest = statuses.filter({ $0.kind == kind }).map(\.boundAt).min() {
                linked.append(ScarceLinkBudget.Linked(peer: session.peer, since: oldest, reachedOtherwise: other))
            }
        }
        return (linked, otherwise)
    }

    /// Whether a link of scarce `kind` from `peer` may be bound: it may when the peer is already
    /// linked on it, or has a slot being bound (a duplicate the multiplexer settles), or a slot is
    /// free.
    func hasScarceRoom(for peer: PeerID, kind: LinkKind) async -> Bool {
        let (linked, _) = await scarceLinks(of: kind)
        let taken = Set(linked.map(\.peer)).union(scarceReservations.withLock { $0.keys })
        return taken.contains(peer) || taken.count < configuration.scarceLinks.limit
    }
}
