/// Which of the links peers hear to hold sessions on, when peers hear more neighbours than they
/// need — a crowded hall where each device hears dozens. Every session carries each change the
/// other side lacks, so what a peer sends and the copies it is handed that it already has grow
/// with its sessions; past a few, extra sessions buy little speed (the hops between two peers
/// shrink slowly) and cost a Bluetooth connection each.
///
/// The plan keeps at most `limit` links a peer, as the BLE budget (`ScarceLinkBudget`) does, with
/// one exception: connectivity comes first. In that order:
/// 1. a spanning forest within the budget, links taken in random order, so that every peer
///    reaches every other it can;
/// 2. parts still apart (every link between them lands on a full peer) are joined anyway, by the
///    link whose busier end is least busy — a peer only a full peer hears is not cut off;
/// 3. links both ends have room for: first those between peers the kept links put at least
///    `shortcutHops` apart (a shortcut across the mesh; a link between peers already two hops
///    apart mostly doubles deliveries), then any, until the peers are full.
///
/// A peer that hears no more than `limit` others keeps every link it hears unless a neighbour is
/// full. A pure plan over peer indices: every peer computes the same from the same graph (the
/// presence graph names who hears whom) and the same seed.
public struct LinkPruning: Sendable, Hashable {
    /// Sessions a peer holds at most (unless it alone joins part of the mesh to the rest).
    public var limit: Int
    /// How far apart, in hops over the kept links, two peers must be for a link between them to
    /// count as a shortcut and go before the others.
    public var shortcutHops = 3

    public init(limit: Int = ScarceLinkBudget().limit) {
        precondition(limit >= 1, "a pruning limit of \(limit) sessions keeps no link")
        self.limit = limit
    }

    /// Of `links` between peers `0..<peers` (each pair once, no loops), the indices of those to
    /// keep, ascending. `random` orders the links that tie; the same generator state gives the
    /// same plan.
    public func kept<R: RandomNumberGenerator>(_ links: [(a: Int, b: Int)], peers: Int, using random: inout R) -> [Int] {
        var graph = KeptLinks(peers: peers)
        var keep = Array(repeating: false, count: links.count)
        let order = links.indices.shuffled(using: &random)
        func add(_ index: Int) {
            keep[index] = true
            graph.add(links[index].a, links[index].b)
        }
        func hasRoom(_ index: Int) -> Bool {
            graph.degree[links[index].a] < limit && graph.degree[links[index].b] < limit
        }

        // 1. A spanning forest within the budget.
        for index in order where hasRoom(index) && graph.part(links[index].a) != graph.part(links[index].b) {
            add(index)
        }
        // 2. Parts still apart: joined over the budget, by the least loaded link each time.
        while true {
            var best: (index: Int, load: Int)?
            for index in order where graph.part(links[index].a) != graph.part(links[index].b) {
                let load = max(graph.degree[links[index].a], graph.degree[links[index].b])
                if best == nil || load < best!.load { best = (index, load) }
            }
            guard let best else { break }
            add(best.index)
        }
        // 3. Shortcuts first, then any link both ends have room for.
        for index in order where !keep[index] && hasRoom(index) {
            if graph.hops(links[index].a, links[index].b, atMost: shortcutHops - 1) == nil { add(index) }
        }
        for index in order where !keep[index] && hasRoom(index) {
            add(index)
        }
        return keep.indices.filter { keep[$0] }
    }
}

/// The links kept so far: neighbours, degrees, and which part of the mesh each peer is in.
private struct KeptLinks {
    var neighbours: [[Int]]
    var degree: [Int]
    private var parent: [Int]

    init(peers: Int) {
        neighbours = Array(repeating: [], count: peers)
        degree = Array(repeating: 0, count: peers)
        parent = Array(0..<peers)
    }

    mutating func add(_ a: Int, _ b: Int) {
        neighbours[a].append(b)
        neighbours[b].append(a)
        degree[a] += 1
        degree[b] += 1
        let (rootA, rootB) = (part(a), part(b))
        if rootA != rootB { parent[rootA] = rootB }
    }

    /// A representative of the peers `peer` reaches (union-find, halving paths as it goes).
    mutating func part(_ peer: Int) -> Int {
        var peer = peer
        while parent[peer] != peer {
            parent[peer] = parent[parent[peer]]
            peer = parent[peer]
        }
        return peer
    }

    /// Hops from `a` to `b` over the kept links if they are at most `limit`, else nil.
    func hops(_ a: Int, _ b: Int, atMost limit: Int) -> Int? {
        if a == b { return 0 }
        var seen: Set<Int> = [a]
        var frontier = [a]
        for depth in 1...max(limit, 1) where depth <= limit {
            var next: [Int] = []
            for peer in frontier {
                for neighbour in neighbours[peer] where seen.insert(neighbour).inserted {
                    if neighbour == b { return depth }
                    next.append(neighbour)
                }
            }
            frontier = next
        }
        return nil
    }
}
