/// Which peers to hold links to on a transport whose links are few — a Bluetooth controller keeps
/// a handful of connections at once. At most `limit` links; peers that no other transport reaches
/// are linked first (for them this link is the only way in); and every `rotationInterval`, when
/// peers wait and no slot is free, one link is let go for the best waiting peer — one whose peer
/// is reached otherwise if there is one, else the oldest — so that the mesh does not settle into
/// islands of whoever met first. The dropped peer waits its turn like any other.
///
/// A pure plan: the transport's owner asks for one whenever what it sees changes (and at least
/// once per rotation interval), and dials and closes as it says.
public struct ScarceLinkBudget: Sendable, Hashable {
    /// Concurrent links, dialled and accepted together.
    public var limit: Int
    /// How often one link may be exchanged for a waiting peer.
    public var rotationInterval: Duration

    public init(limit: Int = 4, rotationInterval: Duration = .seconds(60)) {
        precondition(limit >= 1, "a link budget of \(limit) links allows nothing")
        self.limit = limit
        self.rotationInterval = rotationInterval
    }

    /// A peer linked on this transport now.
    public struct Linked: Sendable, Hashable {
        public var peer: PeerID
        /// When the link came up.
        public var since: ContinuousClock.Instant
        /// Whether another transport also links this side to the peer (LAN, the relay).
        public var reachedOtherwise: Bool

        public init(peer: PeerID, since: ContinuousClock.Instant, reachedOtherwise: Bool) {
            self.peer = peer
            self.since = since
            self.reachedOtherwise = reachedOtherwise
        }
    }

    /// A peer in range that this transport does not link yet.
    public struct Candidate: Sendable, Hashable {
        public var peer: PeerID
        public var reachedOtherwise: Bool
        /// When this transport last linked the peer; nil if never. Those linked longest ago go
        /// first, so that rotation reaches every peer in range, not always the same few.
        public var lastLinked: ContinuousClock.Instant?

        public init(peer: PeerID, reachedOtherwise: Bool, lastLinked: ContinuousClock.Instant? = nil) {
            self.peer = peer
            self.reachedOtherwise = reachedOtherwise
            self.lastLinked = lastLinked
        }
    }

    public struct Plan: Sendable, Hashable {
        /// Peers to dial, best first.
        public var dial: [PeerID] = []
        /// Peers whose link to close, to make room.
        public var drop: [PeerID] = []
        /// Whether this plan exchanges a link: the owner records `now` as the last rotation.
        public var rotates = false

        public init(dial: [PeerID] = [], drop: [PeerID] = [], rotates: Bool = false) {
            self.dial = dial
            self.drop = drop
            self.rotates = rotates
        }
    }

    /// What to dial and what to drop, given the links held, the peers in range, the time, and
    /// when the last exchange happened (at first: when the owner started, so that the first
    /// links get a full interval). Over the limit (accepted links count too), the least needed
    /// links are dropped down to it.
    public func plan(
        linked: [Linked], candidates: [Candidate], now: ContinuousClock.Instant, lastRotation: ContinuousClock.Instant
    ) -> Plan {
        let held = Set(linked.map(\.peer))
        // Best first: the peers only this transport reaches, then those linked longest ago (never
        // first), then by id so that plans are stable.
        let waiting = candidates.filter { !held.contains($0.peer) }.sorted { a, b in
            if a.reachedOtherwise != b.reachedOtherwise { return !a.reachedOtherwise }
            if a.lastLinked != b.lastLinked {
                guard let first = a.lastLinked else { return true }
                guard let second = b.lastLinked else { return false }
                return first < second
            }
            return a.peer < b.peer
        }
        // Least needed first: the peers reached otherwise, then the oldest links.
        let expendable = linked.sorted { ($0.reachedOtherwise ? 0 : 1, $0.since) < ($1.reachedOtherwise ? 0 : 1, $1.since) }

        if linked.count > limit {
            return Plan(drop: expendable.prefix(linked.count - limit).map(\.peer))
        }
        let free = limit - linked.count
        if free > 0 {
            return Plan(dial: waiting.prefix(free).map(\.peer))
        }
        guard let best = waiting.first, let victim = expendable.first, now - lastRotation >= rotationInterval else { return Plan() }
        // A peer reached otherwise is never worth a link held to one that only this reaches.
        if best.reachedOtherwise && !victim.reachedOtherwise { return Plan() }
        return Plan(dial: [best.peer], drop: [victim.peer], rotates: true)
    }
}
