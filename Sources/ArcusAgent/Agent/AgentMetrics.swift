import ArcusMesh
import ArcusSync
import Metrics
import Synchronization

/// The agent's figures, as swift-metrics instruments made by the factory the agent is given
/// (Prometheus, for `GET /metrics`). Names are documented in Docs/Agent.md.
///
/// Counters that the sync engine already keeps (bytes, frames) are brought up to date just
/// before each scrape (`refresh(from:)`): the engine's totals only grow, so the counters are
/// incremented by what they grew since the last scrape.
final class AgentMetrics: Sendable {
    private let factory: any MetricsFactory
    private let syncBytesSent, syncBytesReceived, syncFramesSent, syncFramesReceived: Counter
    /// Documents that peers' deltas changed here: how far a catch-up has come.
    private let syncDocumentsReceived: Counter
    /// Documents in the deltas sent to peers: whether a write has left this agent.
    private let syncDocumentsSent: Counter
    private let syncSessions: Gauge
    private let syncLag: Gauge
    /// The engine's totals at the last scrape, and when frames last arrived.
    private let reported = Mutex((statistics: SyncStatistics(), lastHeard: ContinuousClock.now))

    init(factory: any MetricsFactory) {
        self.factory = factory
        syncBytesSent = Counter(label: "arcus_sync_bytes_sent_total", dimensions: [], factory: factory)
        syncBytesReceived = Counter(label: "arcus_sync_bytes_received_total", dimensions: [], factory: factory)
        syncFramesSent = Counter(label: "arcus_sync_frames_sent_total", dimensions: [], factory: factory)
        syncFramesReceived = Counter(label: "arcus_sync_frames_received_total", dimensions: [], factory: factory)
        syncDocumentsReceived = Counter(label: "arcus_sync_documents_received_total", dimensions: [], factory: factory)
        syncDocumentsSent = Counter(label: "arcus_sync_documents_sent_total", dimensions: [], factory: factory)
        syncSessions = Gauge(label: "arcus_sync_sessions", dimensions: [], factory: factory)
        syncLag = Gauge(label: "arcus_sync_lag_seconds", dimensions: [], factory: factory)
        // Every per-transport series exists from the start, at zero, so that dashboards and
        // alerts see a real series before the first link.
        for kind in LinkKind.allCases {
            links(kind).set(0)
            linkBytes(kind, direction: "sent").increment(by: 0)
            linkBytes(kind, direction: "received").increment(by: 0)
            for result in Self.handshakeResults { handshakes(kind, result: result).increment(by: 0) }
            failovers(kind).increment(by: 0)
        }
        syncLag.record(0)
    }

    /// Links the mesh sessions hold now, by transport.
    func links(_ kind: LinkKind) -> Meter {
        Meter(label: "arcus_links", dimensions: [("transport", kind.rawValue)], factory: factory)
    }

    func linkBytes(_ kind: LinkKind, direction: String) -> Counter {
        Counter(label: "arcus_link_bytes_total", dimensions: [("transport", kind.rawValue), ("direction", direction)], factory: factory)
    }

    /// How a link's handshake ended: `accepted`; `failed` (the peer broke the protocol, could not
    /// authenticate, or closed the link, also before its transport hello); `timed_out` (the
    /// deadline passed first); `refused` (closed as it was accepted: too many were pending).
    static let handshakeResults = ["accepted", "failed", "timed_out", "refused"]

    func handshakes(_ kind: LinkKind, result: String) -> Counter {
        Counter(label: "arcus_handshakes_total", dimensions: [("transport", kind.rawValue), ("result", result)], factory: factory)
    }

    /// Counts what `PendingHandshakes` saw of an accepted link: its refusal, or how its hello
    /// and handshake ended (the agent counts the links it dials itself, in `admit`).
    func count(_ event: PendingHandshakes.Event) {
        switch event {
        case .refused(let kind, _, _):
            handshakes(kind, result: "refused").increment()
        case .settled(let kind, _, let outcome):
            let result: String
            switch outcome {
            case .completed: result = "accepted"
            case .failed: result = "failed"
            case .timedOut: result = "timed_out"
            }
            handshakes(kind, result: result).increment()
        }
    }

    /// Log lines `RateLimitedLog` left out, by the kind of event.
    func logLinesLeftOut(_ kind: String) -> Counter {
        Counter(label: "arcus_log_lines_left_out_total", dimensions: [("event", kind)], factory: factory)
    }

    /// Links waiting for their hello and handshake now, read at each scrape.
    func pendingHandshakes(_ count: Int) {
        Gauge(label: "arcus_pending_handshakes", dimensions: [], factory: factory).record(count)
    }

    /// A session's active link died and another took over; labelled by the transport taking over.
    func failovers(_ kind: LinkKind) -> Counter {
        Counter(label: "arcus_failovers_total", dimensions: [("transport", kind.rawValue)], factory: factory)
    }

    /// Brings the engine's figures up to date: those of ended sessions (the engine's totals)
    /// plus those of running ones. The sync lag is how long the running sessions have gone
    /// without a frame from any peer, as seen between scrapes (0 with no session).
    ///
    /// A session that ends between the two readings may be counted twice or not at all for a
    /// moment; the counters keep the highest figure seen, so they never count it twice.
    @discardableResult
    func refresh(from engine: SyncEngine) async -> SyncFigures {
        let sessions = engine.sessions
        let now = await engine.statisticsSoFar
        let (before, lag) = reported.withLock { reported in
            let before = reported.statistics
            if now.framesReceived > before.framesReceived || sessions.isEmpty { reported.lastHeard = .now }
            reported.statistics.bytesSent = max(before.bytesSent, now.bytesSent)
            reported.statistics.bytesReceived = max(before.bytesReceived, now.bytesReceived)
            reported.statistics.framesSent = max(before.framesSent, now.framesSent)
            reported.statistics.framesReceived = max(before.framesReceived, now.framesReceived)
            reported.statistics.documentsReceived = max(before.documentsReceived, now.documentsReceived)
            reported.statistics.documentsSent = max(before.documentsSent, now.documentsSent)
            return (before, sessions.isEmpty ? .zero : ContinuousClock.now - reported.lastHeard)
        }
        syncBytesSent.increment(by: max(0, now.bytesSent - before.bytesSent))
        syncBytesReceived.increment(by: max(0, now.bytesReceived - before.bytesReceived))
        syncFramesSent.increment(by: max(0, now.framesSent - before.framesSent))
        syncFramesReceived.increment(by: max(0, now.framesReceived - before.framesReceived))
        syncDocumentsReceived.increment(by: max(0, now.documentsReceived - before.documentsReceived))
        syncDocumentsSent.increment(by: max(0, now.documentsSent - before.documentsSent))
        syncSessions.record(sessions.count)
        let lagSeconds = lag.inSeconds
        syncLag.record(lagSeconds)
        let counted = reported.withLock { $0.statistics }
        return SyncFigures(
            sessions: sessions.count, lagSeconds: lagSeconds, bytesSent: counted.bytesSent, bytesReceived: counted.bytesReceived,
            framesSent: counted.framesSent, framesReceived: counted.framesReceived
        )
    }
}

/// The sync figures of one `AgentMetrics.refresh`: what `/metrics` then exports, for the status
/// document, so that the page and a dashboard never disagree.
struct SyncFigures {
    var sessions: Int
    var lagSeconds: Double
    var bytesSent, bytesReceived, framesSent, framesReceived: Int
}
