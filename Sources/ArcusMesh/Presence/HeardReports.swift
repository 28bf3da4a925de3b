/// The latest report from every origin a peer has heard of, with when it arrived, so that origins
/// that stop reporting drop out after a time to live.
///
/// After an origin expires its last sequence number is remembered for one more time to live, so a
/// delayed copy of an old report, still relayed somewhere, cannot bring it back.
struct HeardReports: Sendable {
    struct Heard: Sendable {
        var report: PresenceReport
        var at: ContinuousClock.Instant
    }

    let timeToLive: Duration
    /// Origins kept at once: a member sending reports in made-up names cannot grow memory past it.
    let capacity: Int
    private(set) var latest: [PeerID: Heard] = [:]
    private var expired: [PeerID: Heard] = [:]

    init(timeToLive: Duration, capacity: Int) {
        self.timeToLive = timeToLive
        self.capacity = capacity
    }

    /// Keeps `report` if it is newer than anything heard from its origin; false for a repeat or an
    /// older one (which a relay must not forward again), and for a new origin while `capacity`
    /// origins are kept.
    mutating func accept(_ report: PresenceReport, at now: ContinuousClock.Instant) -> Bool {
        let known = latest[report.origin] ?? expired[report.origin]
        if let known, known.report.sequence >= report.sequence { return false }
        if latest[report.origin] == nil, latest.count >= capacity { return false }
        expired[report.origin] = nil
        latest[report.origin] = Heard(report: report, at: now)
        return true
    }

    /// Drops the reports not refreshed within the time to live; returns their origins.
    mutating func expire(at now: ContinuousClock.Instant) -> [PeerID] {
        expired = expired.filter { now - $0.value.at <= timeToLive * 2 }
        let stale = latest.filter { now - $0.value.at > timeToLive }
        for (origin, heard) in stale {
            latest[origin] = nil
            expired[origin] = heard
        }
        return stale.keys.sorted()
    }
}
