/// The mesh as one peer knows it: peers, and the links between them with their transport and
/// quality. A value: a snapshot that never changes under its reader.
///
/// Links are undirected and keyed by their two ends and their kind, so two peers joined by LAN
/// and Bluetooth have two edges. `version` counts the changes the graph's owner made; every
/// mutation that changes something bumps it, and `PresenceTracker` bumps it once per graph it
/// publishes, so a reader can tell two snapshots apart without comparing them.
public struct PresenceGraph: Sendable, Hashable {
    /// A peer in the graph.
    public struct Peer: Sendable, Hashable {
        public let id: PeerID
        /// The name the peer gave itself; nil for a peer known only as someone's neighbour (it sent
        /// no report, or its report has not arrived).
        public var name: String?
        /// Small facts the peer publishes about itself (see `PresenceReport.Limits`).
        public var metadata: [String: String]

        public init(id: PeerID, name: String? = nil, metadata: [String: String] = [:]) {
            self.id = id
            self.name = name
            self.metadata = metadata
        }
    }

    /// An undirected link: the two ends in id order, and the transport.
    public struct Edge: Sendable, Hashable, CustomStringConvertible {
        public let low: PeerID
        public let high: PeerID
        public let kind: LinkKind

        public init(_ a: PeerID, _ b: PeerID, kind: LinkKind) {
            (low, high) = a < b ? (a, b) : (b, a)
            self.kind = kind
        }

        /// The end that is not `peer`, or nil if `peer` is neither end.
        public func end(oppositeTo peer: PeerID) -> PeerID? {
            peer == low ? high : peer == high ? low : nil
        }

        public var description: String { "\(low) –\(kind.rawValue)– \(high)" }
    }

    public internal(set) var version: UInt64 = 0
    public private(set) var peers: [PeerID: Peer] = [:]
    public private(set) var links: [Edge: LinkQuality] = [:]

    public init() {}

    /// Adds `peer` or replaces what is known of it.
    public mutating func upsert(_ peer: Peer) {
        guard peers[peer.id] != peer else { return }
        peers[peer.id] = peer
        version += 1
    }

    /// Adds or updates the link of `kind` between `a` and `b`, adding either end not yet known as
    /// an unnamed peer. A link from a peer to itself is ignored.
    public mutating func connect(_ a: PeerID, _ b: PeerID, kind: LinkKind, quality: LinkQuality = LinkQuality()) {
        guard a != b else { return }
        for id in [a, b] where peers[id] == nil { peers[id] = Peer(id: id) }
        let edge = Edge(a, b, kind: kind)
        guard links[edge] != quality else { return }
        links[edge] = quality
        version += 1
    }

    /// Removes the link of `kind` between `a` and `b`; the peers stay.
    public mutating func disconnect(_ a: PeerID, _ b: PeerID, kind: LinkKind) {
        guard links.removeValue(forKey: Edge(a, b, kind: kind)) != nil else { return }
        version += 1
    }

    /// Removes `peer` and every link it has.
    public mutating func remove(peer: PeerID) {
        let before = links.count
        links = links.filter { $0.key.end(oppositeTo: peer) == nil }
        guard peers.removeValue(forKey: peer) != nil || links.count != before else { return }
        version += 1
    }

    /// The peers `peer` has at least one link to, in id order.
    public func neighbours(of peer: PeerID) -> [PeerID] {
        Set(links.keys.compactMap { $0.end(oppositeTo: peer) }).sorted()
    }

    /// The links between `a` and `b`, by kind.
    public func links(between a: PeerID, _ b: PeerID) -> [LinkKind: LinkQuality] {
        var found: [LinkKind: LinkQuality] = [:]
        for kind in LinkKind.allCases {
            if let quality = links[Edge(a, b, kind: kind)] { found[kind] = quality }
        }
        return found
    }
}
