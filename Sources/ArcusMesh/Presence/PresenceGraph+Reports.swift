extension PresenceGraph {
    /// The union of `reports` (at most one per origin), as seen from `local`, whose own report is
    /// among them.
    ///
    /// Every origin is a named peer, every neighbour it lists at least an unnamed one. A link
    /// touching `local` is in the graph when `local` lists it: it knows its own links first-hand.
    /// Any other link is in when every end that has a report lists it, so the first end to report
    /// a link down removes it. A link's quality merges what its ends report
    /// (`LinkQuality.merged(with:)`). Once every peer holds the same reports, every peer builds the
    /// same graph, whatever their order.
    init(reports: [PresenceReport], local: PeerID, version: UInt64) {
        self.init()
        var reporters = Set<PeerID>()
        var listed: [Edge: [PeerID: LinkQuality]] = [:]
        for report in reports {
            reporters.insert(report.origin)
            upsert(Peer(id: report.origin, name: report.name, metadata: report.metadata))
            for link in report.links where link.peer != report.origin {
                listed[Edge(report.origin, link.peer, kind: link.kind), default: [:]][report.origin] = link.quality
            }
        }
        for (edge, views) in listed {
            let ends = [edge.low, edge.high]
            let isUp = ends.contains(local)
                ? views[local] != nil
                : ends.allSatisfy { views[$0] != nil || !reporters.contains($0) }
            guard isUp else { continue }
            let quality = views.values.dropFirst().reduce(views.values.first!) { $0.merged(with: $1) }
            connect(edge.low, edge.high, kind: edge.kind, quality: quality)
        }
        self.version = version
    }
}
