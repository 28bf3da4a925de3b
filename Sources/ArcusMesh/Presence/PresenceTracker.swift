import ArcusCodec
import Foundation
import Synchronization

/// This peer's view of the mesh's presence: its own links, fed by the multiplexer, and the latest
/// report of every other peer, relayed to it by its neighbours. Its `graph` is their union.
///
/// Thread-safe: every method may be called from any task; each takes a lock briefly and never
/// suspends. Time comes from `now`, injected so that tests can move it by hand.
///
/// The caller moves the reports (see Docs/Presence.md): it sends `makeReport()`'s bytes to every
/// neighbour when a link goes up or down and at least every `timeToLive / 3`; it hands every report
/// a neighbour sends to `ingest(_:)` and forwards the same bytes to its other neighbours when that
/// returns true; it calls `expire()` about once a second.
public final class PresenceTracker: Sendable {
    public let peer: PeerID
    public let timeToLive: Duration

    private struct LocalLink: Hashable, Comparable {
        let peer: PeerID
        let kind: LinkKind

        static func < (a: LocalLink, b: LocalLink) -> Bool {
            a.peer != b.peer ? a.peer < b.peer : a.kind.rawValue < b.kind.rawValue
        }
    }

    private struct State {
        var name: String
        var metadata: [String: String]
        var sequence: UInt64
        var links: [LocalLink: LinkQuality] = [:]
        var heard: HeardReports
        var graph = PresenceGraph()
        var observers: [Int: AsyncStream<PresenceGraph>.Continuation] = [:]
        var nextObserver = 0

        func localReport(origin: PeerID) -> PresenceReport {
            PresenceReport(
                origin: origin, name: name, sequence: sequence, metadata: metadata,
                links: links.keys.sorted().map { PresenceReport.Neighbour(peer: $0.peer, kind: $0.kind, quality: links[$0]!) }
            )
        }
    }

    private let state: Mutex<State>
    private let now: @Sendable () -> ContinuousClock.Instant

    /// - Parameters:
    ///   - firstSequence: the sequence number of the first report. It must exceed every number
    ///     this peer used before a restart, or peers ignore its reports until they expire its old
    ///     ones; the default, the wall clock in milliseconds, does that.
    ///   - maximumPeers: how many other peers' reports are kept at once; reports from further
    ///     origins are refused (not news) until some expire.
    ///   - now: the monotonic clock that reports age by.
    /// - Throws: `CodecError.limitExceeded` if `name` or `metadata` exceed `PresenceReport.Limits`.
    public init(
        peer: PeerID, name: String, metadata: [String: String] = [:], timeToLive: Duration = .seconds(30),
        firstSequence: UInt64 = PresenceTracker.wallClockSequence(), maximumPeers: Int = 1024,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) throws(CodecError) {
        try PresenceReport(origin: peer, name: name, sequence: firstSequence, metadata: metadata).validate()
        self.peer = peer
        self.timeToLive = timeToLive
        self.now = now
        var initial = State(name: name, metadata: metadata, sequence: firstSequence, heard: HeardReports(timeToLive: timeToLive, capacity: maximumPeers))
        initial.graph = PresenceGraph(reports: [initial.localReport(origin: peer)], local: peer, version: 1)
        state = Mutex(initial)
    }

    deinit {
        let observers = state.withLock { Array($0.observers.values) }
        for observer in observers { observer.finish() }
    }

    /// Milliseconds since 1970: grows across restarts as long as the clock does not go back.
    public static func wallClockSequence() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1000))
    }

    // MARK: Local links, from the multiplexer

    /// A link of `kind` to `peer` is up (authenticated). Idempotent.
    public func linkUp(peer other: PeerID, kind: LinkKind) {
        guard other != peer else { return }
        change { state in
            if state.links[LocalLink(peer: other, kind: kind)] == nil {
                state.links[LocalLink(peer: other, kind: kind)] = LinkQuality()
            }
        }
    }

    /// New figures for an up link; nil keeps the figure known. Ignored for a link that is not up.
    public func linkQuality(peer other: PeerID, kind: LinkKind, rtt: Duration?, throughput: UInt64?) {
        change { state in
            guard var quality = state.links[LocalLink(peer: other, kind: kind)] else { return }
            if let rtt { quality.rttMilliseconds = Self.milliseconds(rtt) }
            if let throughput { quality.throughput = throughput }
            state.links[LocalLink(peer: other, kind: kind)] = quality
        }
    }

    /// Whether the session to `peer` sends on this link now. Ignored for a link that is not up.
    public func linkActive(peer other: PeerID, kind: LinkKind, _ isActive: Bool) {
        change { state in
            state.links[LocalLink(peer: other, kind: kind)]?.isActive = isActive
        }
    }

    /// The link of `kind` to `peer` is gone. Idempotent.
    public func linkDown(peer other: PeerID, kind: LinkKind) {
        change { state in
            state.links[LocalLink(peer: other, kind: kind)] = nil
        }
    }

    // MARK: Reports

    /// This peer's report, with a new sequence number, so that every peer takes it as news.
    public func makeReport() -> PresenceReport {
        state.withLock { state in
            state.sequence += 1
            return state.localReport(origin: peer)
        }
    }

    /// Takes a report a neighbour sent. True when it is news (a newer report from its origin):
    /// forward the same bytes to every other neighbour. False for a repeat, an older report or one
    /// of this peer's own. Throws `CodecError` for bytes that are not a valid report.
    public func ingest(_ bytes: [UInt8]) throws(CodecError) -> Bool {
        ingest(try PresenceReport(decoding: bytes))
    }

    /// `ingest(_:)` for a report already decoded.
    public func ingest(_ report: PresenceReport) -> Bool {
        guard report.origin != peer else { return false }
        let instant = now()
        var isNew = false
        changeIfNeeded({ state in
            let expired = state.heard.expire(at: instant)
            let previous = state.heard.latest[report.origin]?.report
            isNew = state.heard.accept(report, at: instant)
            // Every report arrives once from each neighbour, and most refreshes repeat the last:
            // neither can change the graph, so neither pays for rebuilding it.
            let sameAsBefore = previous.map { $0.name == report.name && $0.metadata == report.metadata && $0.links == report.links } ?? false
            return !expired.isEmpty || (isNew && !sameAsBefore)
        })
        return isNew
    }

    /// Drops the peers whose reports are older than the time to live; returns them.
    @discardableResult
    public func expire() -> [PeerID] {
        let instant = now()
        var expired: [PeerID] = []
        change { state in expired = state.heard.expire(at: instant) }
        return expired
    }

    // MARK: Observing

    /// The graph now.
    public var graph: PresenceGraph { state.withLock { $0.graph } }

    /// The graph now, then each new graph as it changes. Every access is a new stream; any number
    /// may be open. A slow reader skips to the newest graph (it is buffered one deep): it never
    /// sees an outdated one after a newer. The stream finishes when the tracker is released.
    public var updates: AsyncStream<PresenceGraph> {
        let (stream, continuation) = AsyncStream.makeStream(of: PresenceGraph.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state in
            let id = state.nextObserver
            state.nextObserver += 1
            state.observers[id] = continuation
            continuation.yield(state.graph)
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Applies `body` and, if the graph it leads to differs, publishes that with the next version.
    /// Yields under the lock so observers see graphs in version order; yielding never calls back.
    private func change(_ body: (inout State) -> Void) {
        changeIfNeeded({ state in
            body(&state)
            return true
        })
    }

    /// Like `change(_:)`, for a body that says whether the graph may have changed.
    private func changeIfNeeded(_ body: (inout State) -> Bool) {
        state.withLock { state in
            guard body(&state) else { return }
            let reports = [state.localReport(origin: peer)] + state.heard.latest.values.map(\.report)
            let graph = PresenceGraph(reports: reports, local: peer, version: state.graph.version + 1)
            guard graph.peers != state.graph.peers || graph.links != state.graph.links else { return }
            state.graph = graph
            for observer in state.observers.values { observer.yield(graph) }
        }
    }

    private static func milliseconds(_ duration: Duration) -> UInt32 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let ms = UInt64(seconds) * 1000 + UInt64(attoseconds / 1_000_000_000_000_000)
        return UInt32(clamping: ms)
    }
}
