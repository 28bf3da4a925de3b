import ArcusCodec

/// Presence over the sessions (Docs/Presence.md): the multiplexer tells its tracker which links are
/// up, active and how fast, sends our report to every peer when a link comes or goes (coalesced)
/// and every `refreshInterval`, and floods the reports it hears: each one that is news goes on,
/// byte for byte, to every session but the one it came from.
extension Multiplexer {
    /// Presence moved so far; zero without a tracker.
    public var presenceTraffic: PresenceTraffic { presence?.traffic ?? PresenceTraffic() }

    /// The closure a new session hands each presence frame to.
    func presenceReceiver(from peer: PeerID) -> @Sendable ([UInt8]) -> Void {
        guard presence != nil else { return { _ in } }
        return { [weak self] report in
            Task { await self?.presenceArrived(report, from: peer) }
        }
    }

    /// A link of `session` was bound or has ended, or the periodic check: brings the tracker in
    /// line, and tells the mesh when a link came or went.
    func presenceLinksChanged(_ session: PeerSession) async {
        guard presence != nil, !isClosed else { return }
        startPresenceTimerIfNeeded()
        // Two reads of one session can overlap (a link ends during the periodic check); applying
        // the older one last would bring back a link that is gone.
        guard let read = presence?.beginRead(of: session.peer) else { return }
        let links = await session.linkFigures
        guard presence?.isLatest(read, of: session.peer) == true else { return }
        guard let change = presence?.update(peer: session.peer, links: links) else { return }
        if change.newNeighbour {
            // It may know nothing of the mesh beyond us: hand it what we hold now rather than
            // let it wait a refresh interval. It forwards what is news to it, and no further.
            for report in presence?.reportsToHand(to: session.peer) ?? [] {
                presence?.traffic.reportsHandedOn += 1
                send(report, to: session)
            }
        }
        if change.topologyChanged { schedulePresenceReport() }
    }

    /// A neighbour's report: news goes on to every other session, once.
    func presenceArrived(_ report: [UInt8], from neighbour: PeerID) async {
        guard let tracker = presence?.tracker, !isClosed else { return }
        presence?.traffic.reportsReceived += 1
        let decoded: PresenceReport
        do {
            decoded = try PresenceReport(decoding: report)
        } catch {
            presence?.traffic.reportsRefused += 1
            eventSink.yield(.presenceRefused(from: neighbour, reason: "\(error)"))
            return
        }
        guard tracker.ingest(decoded) else { return }
        presence?.traffic.reportsForwarded += 1
        presence?.remember(report, from: decoded.origin)
        broadcast(report, except: neighbour)
    }

    /// Coalesces link changes: one report goes `coalescing` after the first.
    private func schedulePresenceReport() {
        guard presence?.reportScheduled == false else { return }
        presence?.reportScheduled = true
        Task { [weak self] in
            try? await Task.sleep(for: PresenceExchange.coalescing)
            await self?.sendPresenceReport()
        }
    }

    /// Our report, with a new sequence number, to every session.
    private func sendPresenceReport() {
        guard let tracker = presence?.tracker, !isClosed else { return }
        presence?.reportScheduled = false
        presence?.reported(at: .now)
        presence?.traffic.reportsMade += 1
        broadcast(tracker.makeReport().encoded(), except: nil)
    }

    private func broadcast(_ report: [UInt8], except excluded: PeerID?) {
        for (peer, session) in sessions where peer != excluded { send(report, to: session) }
    }

    /// Hands a report to a session, which sends it on its active link; counted when it goes. The
    /// hop to the session runs on its own task so that one busy session never holds the others.
    private func send(_ report: [UInt8], to session: PeerSession) {
        presence?.traffic.noteReport(size: report.count)
        Task { [weak self] in
            guard await session.sendPresence(report) else { return }
            await self?.countPresenceSent(report)
        }
    }

    private func countPresenceSent(_ report: [UInt8]) {
        presence?.counted(sent: report)
    }

    // MARK: The periodic check

    private func startPresenceTimerIfNeeded() {
        guard presence != nil, presence?.timer == nil, !isClosed else { return }
        presence?.timer = Task { [weak self] in
            // A random phase, so that multiplexers started together do not all tick together.
            try? await Task.sleep(for: PresenceExchange.tickInterval * Double.random(in: 0..<1))
            while !Task.isCancelled {
                try? await Task.sleep(for: PresenceExchange.tickInterval)
                guard let self, !Task.isCancelled else { return }
                await self.presenceTick()
            }
        }
    }

    /// Expires old reports, refreshes link figures (round trips, the active link) and sends the
    /// periodic report when it is due.
    private func presenceTick() async {
        guard let tracker = presence?.tracker, !isClosed else { return }
        tracker.expire()
        presence?.forgetExpiredReports()
        for session in sessions.values { await presenceLinksChanged(session) }
        let due = presence?.nextRefresh.map { ContinuousClock.now >= $0 } ?? true
        if due, presence?.reportScheduled == false { sendPresenceReport() }
    }

    func stopPresence() {
        presence?.timer?.cancel()
        presence?.timer = nil
    }
}
