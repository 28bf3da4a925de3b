import ArcusAgent
import ArcusCRDT
import ArcusMesh

/// Who hears whom in a mesh of `peerCount` peers: undirected links between peer indices.
public struct Topology: Sendable, CustomStringConvertible {
    public enum Shape: String, Sendable, CaseIterable {
        /// Each peer links to the next: a convoy, a corridor. Data crosses N - 1 hops.
        case chain
        /// Peer 0 links to every other: a gateway and its sensors.
        case star
        /// Peers on a grid, each linked to the peers beside, above and below it: devices spread
        /// over a floor, each in radio range of its neighbours only. Degree at most 4, whatever N.
        case mesh
        /// A random spanning tree plus random extra links, about 3 per peer on average (or the
        /// `degree` asked for): people moving through a site, or with a high degree a crowded
        /// hall where each device hears dozens. Connected, different for each seed.
        case random
    }

    public let shape: Shape
    public let peerCount: Int
    /// Each link once, as (lower index, higher index).
    public let links: [Link]

    public struct Link: Sendable, Hashable {
        public let a: Int, b: Int
        public init(_ a: Int, _ b: Int) {
            self.a = min(a, b)
            self.b = max(a, b)
        }
    }

    /// The mean degree `random` aims at unless told otherwise.
    public static let defaultRandomDegree = 3

    /// `degree` is the mean number of peers each peer hears, for `random` (the other shapes
    /// have theirs); the same seed and degree give the same links.
    public init(_ shape: Shape, peers: Int, seed: UInt64 = 1, degree: Int = Topology.defaultRandomDegree) {
        precondition(peers >= 1, "a mesh has at least one peer")
        precondition(degree >= 1, "a random topology needs a mean degree of at least 1")
        self.shape = shape
        self.peerCount = peers
        var links: [Link] = []
        switch shape {
        case .chain:
            links = (0..<max(peers - 1, 0)).map { Link($0, $0 + 1) }
        case .star:
            links = (1..<max(peers, 1)).map { Link(0, $0) }
        case .mesh:
            let width = Self.gridWidth(peers)
            for i in 0..<peers {
                if (i + 1) % width != 0, i + 1 < peers { links.append(Link(i, i + 1)) }
                if i + width < peers { links.append(Link(i, i + width)) }
            }
        case .random:
            var random = SplitMix64(seed: seed)
            var set = Set<Link>()
            for i in 1..<max(peers, 1) { set.insert(Link(i, Int.random(in: 0..<i, using: &random))) }
            // Extra links until the mean degree is about `degree` (never more than a full mesh has).
            let target = min(peers * degree / 2, peers * (peers - 1) / 2)
            while set.count < target {
                let a = Int.random(in: 0..<peers, using: &random), b = Int.random(in: 0..<peers, using: &random)
                if a != b { set.insert(Link(a, b)) }
            }
            links = set.sorted { ($0.a, $0.b) < ($1.a, $1.b) }
        }
        self.links = links
    }

    /// The same peers with only `links` (a subset that carries sessions, say).
    public init(_ shape: Shape, peers: Int, links: [Link]) {
        self.shape = shape
        self.peerCount = peers
        self.links = links.sorted { ($0.a, $0.b) < ($1.a, $1.b) }
    }

    /// The links a peer keeps sessions on when it hears more peers than it needs (`LinkPruning`):
    /// the same peers, each with at most `pruning.limit` links unless it alone joins part of the
    /// mesh to the rest. The same seed gives the same links.
    public func pruned(_ pruning: LinkPruning, seed: UInt64) -> Topology {
        var random = SplitMix64(seed: seed ^ 0x9_4E_ED)
        let kept = pruning.kept(links.map { (a: $0.a, b: $0.b) }, peers: peerCount, using: &random)
        return Topology(shape, peers: peerCount, links: kept.map { links[$0] })
    }

    /// The narrowest grid that is at least as tall as it is wide.
    static func gridWidth(_ peers: Int) -> Int {
        var width = 1
        while (width + 1) * (width + 1) <= peers { width += 1 }
        return width
    }

    /// How many links each peer has.
    public var degrees: [Int] {
        var degrees = Array(repeating: 0, count: peerCount)
        for link in links {
            degrees[link.a] += 1
            degrees[link.b] += 1
        }
        return degrees
    }

    public var meanDegree: Double { peerCount == 0 ? 0 : Double(2 * links.count) / Double(peerCount) }
    public var maxDegree: Int { degrees.max() ?? 0 }

    /// The most hops between two peers.
    public var diameter: Int {
        Self.hops(peers: peerCount, links: links).map { $0.max() ?? 0 }.max() ?? 0
    }

    /// Whether every peer can reach every other.
    public var isConnected: Bool {
        peerCount == 0 || !Self.hops(peers: peerCount, links: links)[0].contains(-1)
    }

    /// Hops between every two of `peers` over `links`, breadth first; -1 where there is no path.
    static func hops(peers: Int, links: [Link]) -> [[Int]] {
        var neighbours = Array(repeating: [Int](), count: peers)
        for link in links {
            neighbours[link.a].append(link.b)
            neighbours[link.b].append(link.a)
        }
        return (0..<peers).map { start in
            var distance = Array(repeating: -1, count: peers)
            distance[start] = 0
            var queue = [start], head = 0
            while head < queue.count {
                let peer = queue[head]
                head += 1
                for next in neighbours[peer] where distance[next] < 0 {
                    distance[next] = distance[peer] + 1
                    queue.append(next)
                }
            }
            return distance
        }
    }

    public var description: String { "\(shape.rawValue) of \(peerCount) peers, \(links.count) links" }
}
