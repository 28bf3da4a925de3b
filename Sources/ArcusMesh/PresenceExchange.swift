/// What the multiplexer knows about moving presence (Docs/Presence.md, "Feeding it from the
/// multiplexer"): which links to each peer the tracker has been told of, the latest report bytes
/// of every origin (for a neighbour that joins), when our last report went, and the figures.
///
/// A value owned by the `Multiplexer` actor; the session traffic is in `Multiplexer+Presence.swift`.
struct PresenceExchange {
    let tracker: PresenceTracker
    var traffic = PresenceTraffic()
    /// A report of ours is due within `coalescing`: further link changes ride on it.
    var reportScheduled = false
    /// When our next periodic report is due: a refresh interval after the last report, less up to
    /// a tenth at random, so that peers that started together do not all report at once.
    var nextRefresh: ContinuousClock.Instant?
    /// Expires reports, refreshes link figures and sends the periodic report.
    var timer: Task<Void, Never>?

    /// Reads of each peer's link statuses begun: a read that a later one overtook is stale.
    private var reads: [PeerID: Int] = [:]
    /// The kinds of link to each peer that the tracker was told are up.
    private var told: [PeerID: Set<LinkKind>] = [:]
    /// What the tracker was last told of each link's activity and round trip: each call rebuilds
    /// its graph, so figures that did not change are not told again.
    private var toldFigures: [PeerID: [LinkKind: (isActive: Bool, rtt: Duration?, throughput: Double?)]] = [:]
    /// Each origin's latest report as it arrived, to hand on unchanged to a new neighbour.
    private var latestReports: [PeerID: [UInt8]] = [:]

    /// Link changes within this long make one report, so that a burst of links (a peer joining
    /// a mesh, a radio coming back) costs one round of reports, not one per link.
    static let coalescing: Duration = .milliseconds(100)
    /// Under a third of the tracker's time to live, so that one lost report expires nobody.
    static let refreshInterval: Duration = .seconds(10)
    static let tickInterval: Duration = .seconds(1)

    init(tracker: PresenceTracker) {
        self.tracker = tracker
    }

    mutating func reported(at now: ContinuousClock.Instant) {
        nextRefresh = now + Self.refreshInterval * Double.random(in: 0.9...1)
    }

    /// Numbers a read of `peer`'s link statuses; `isLatest` says whether a later one began since.
    mutating func beginRead(of peer: PeerID) -> Int {
        reads[peer, default: 0] += 1
        return reads[peer]!
    }

    func isLatest(_ read: Int, of peer: PeerID) -> Bool {
        reads[peer] == read
    }

    /// What changed when the tracker was brought in line with a session's links.
    struct LinkChange {
        /// A kind of link to the peer came up or went down: the mesh should hear of it.
        var topologyChanged = false
        /// The peer had no link and now has one: it should get every report we hold.
        var newNeighbour = false
    }

    /// Tells the tracker which links to `peer` are up, active and how fast, from the session's
    /// statuses. Several links of one kind (a duplicate that yields) are one link to the tracker.
    mutating func update(peer: PeerID, links: [SessionLinkFigures]) -> LinkChange {
        let kinds = Set(links.map(\.kind))
        let before = told[peer] ?? []
        for kind in before.subtracting(kinds) { tracker.linkDown(peer: peer, kind: kind) }
        for kind in kinds.subtracting(before) { tracker.linkUp(peer: peer, kind: kind) }
        var figures: [LinkKind: (isActive: Bool, rtt: Duration?, throughput: Double?)] = [:]
        for kind in kinds {
            let ofKind = links.filter { $0.kind == kind }
            let known = kinds.subtracting(before).contains(kind) ? nil : toldFigures[peer]?[kind]
            let isActive = ofKind.contains(where: \.isActive)
            if known?.isActive != isActive { tracker.linkActive(peer: peer, kind: kind, isActive) }
            // Reports carry whole milliseconds; a change below that is no news.
            let rtt = ofKind.compactMap(\.roundTrip).min()
            let rttChanged = rtt != nil && known?.rtt.map({ Self.milliseconds($0) }) != rtt.map(Self.milliseconds)
            // Throughput wanders with the load: only a change of a quarter or more is news.
            let throughput = ofKind.compactMap(\.throughput).max()
            var told = known?.throughput
            if let throughput, told.map({ abs(throughput - $0) >= $0 / 4 }) ?? true { told = throughput }
            if rttChanged || told != known?.throughput {
                tracker.linkQuality(peer: peer, kind: kind, rtt: rtt, throughput: told.map { UInt64($0.rounded()) })
            }
            figures[kind] = (isActive, rtt, told)
        }
        told[peer] = kinds.isEmpty ? nil : kinds
        toldFigures[peer] = kinds.isEmpty ? nil : figures
        return LinkChange(topologyChanged: kinds != before, newNeighbour: before.isEmpty && !kinds.isEmpty)
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    mutating func remember(_ report: [UInt8], from origin: PeerID) {
        latestReports[origin] = report
    }

    /// The reports to hand a new neighbour: those the tracker still holds (an expired one handed
    /// on would bring a departed peer back), not the neighbour's own.
    func reportsToHand(to neighbour: PeerID) -> [[UInt8]] {
        let graph = tracker.graph
        return latestReports.filter { $0.key != neighbour && graph.peers[$0.key]?.name != nil }.map(\.value)
    }

    /// Lets go of the reports the tracker no longer holds (it expires them as it goes).
    mutating func forgetExpiredReports() {
        let graph = tracker.graph
        latestReports = latestReports.filter { graph.peers[$0.key]?.name != nil }
    }

    mutating func counted(sent report: [UInt8]) {
        traffic.framesSent += 1
        traffic.bytesSent += SessionFrame.presenceOverhead + report.count
    }
}

/// How much presence a multiplexer has moved, for figures and tests.
public struct PresenceTraffic: Sendable, Hashable {
    /// Reports of our own made (each sent to every session).
    public var reportsMade = 0
    /// Reports that arrived from neighbours.
    public var reportsReceived = 0
    /// Of those, the ones that were news: each was forwarded once, to every other neighbour.
    public var reportsForwarded = 0
    /// Other peers' reports handed to a new neighbour when its first link came up.
    public var reportsHandedOn = 0
    /// Reports that did not decode; the link stays, the report goes no further.
    public var reportsRefused = 0
    /// Presence frames put on links, and their bytes (type byte included, fragment headers not).
    public var framesSent = 0
    public var bytesSent = 0
    /// The longest report this side made or forwarded, in bytes.
    public var largestReport = 0

    public init() {}

    mutating func noteReport(size: Int) {
        largestReport = max(largestReport, size)
    }
}
