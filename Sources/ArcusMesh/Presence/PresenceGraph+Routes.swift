extension PresenceGraph {
    /// How to reach a peer: the neighbour to hand a message to, and how many links it crosses.
    public struct Route: Sendable, Hashable, CustomStringConvertible {
        public let destination: PeerID
        /// The neighbour of the source on a shortest path; the destination itself when it is a
        /// neighbour.
        public let nextHop: PeerID
        /// Links on a shortest path: 1 for a neighbour, 2 for a neighbour's neighbour, and so on.
        public let hops: Int

        public var description: String { "\(destination) in \(hops) hop(s) via \(nextHop)" }
    }

    /// Every peer `source` can reach over any link, by breadth-first search: fewest hops first,
    /// ties broken by the smaller next-hop id, so every reader of the same graph picks the same
    /// route. `source` itself is not included.
    public func routes(from source: PeerID) -> [PeerID: Route] {
        var adjacency: [PeerID: Set<PeerID>] = [:]
        for edge in links.keys {
            adjacency[edge.low, default: []].insert(edge.high)
            adjacency[edge.high, default: []].insert(edge.low)
        }
        var routes: [PeerID: Route] = [:]
        var frontier: [(peer: PeerID, nextHop: PeerID)] = (adjacency[source] ?? []).sorted().map { ($0, $0) }
        for (peer, _) in frontier { routes[peer] = Route(destination: peer, nextHop: peer, hops: 1) }
        var hops = 1
        while !frontier.isEmpty {
            hops += 1
            var next: [(peer: PeerID, nextHop: PeerID)] = []
            // The frontier is in next-hop order, so the first to reach a peer has the smallest one.
            for (peer, nextHop) in frontier {
                for neighbour in (adjacency[peer] ?? []).sorted() where neighbour != source && routes[neighbour] == nil {
                    routes[neighbour] = Route(destination: neighbour, nextHop: nextHop, hops: hops)
                    next.append((neighbour, nextHop))
                }
            }
            next.sort { $0.nextHop < $1.nextHop }
            frontier = next
        }
        return routes
    }

    /// The route from `source` to `destination`, or nil when no chain of links joins them.
    public func route(from source: PeerID, to destination: PeerID) -> Route? {
        routes(from: source)[destination]
    }

    /// The peers `source` reaches only through others (two hops or more).
    public func reachableThroughOthers(from source: PeerID) -> [Route] {
        routes(from: source).values.filter { $0.hops > 1 }.sorted { $0.destination < $1.destination }
    }
}
