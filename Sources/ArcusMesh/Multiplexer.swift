/// Turns every link to every peer into one `PeerSession` per peer id. Transports hand it each
/// link they dial or accept — a `SecureLink` once the handshake is done, so that the session
/// runs on sealed frames; it says hello on the link (our peer id, incarnation, role and window),
/// reads the peer's, and binds the link to that peer's session.
///
/// Both peers should dial: the tie-break in `PeerSession` keeps one link per transport when both
/// succeed, and the one that exists when a dial fails.
///
/// Given a `PresenceTracker`, it keeps it fed with its links and exchanges presence reports with
/// every peer (`Multiplexer+Presence.swift`).
public actor Multiplexer {
    public nonisolated let localPeer: PeerID
    public nonisolated let configuration: SessionConfiguration
    /// Random per multiplexer, so that a peer that sees it change knows this side restarted.
    public nonisolated let incarnation: UInt64
    public nonisolated let events: AsyncStream<MultiplexerEvent>
    /// The tracker this multiplexer feeds, if it was given one.
    public nonisolated let presenceTracker: PresenceTracker?
    nonisolated let eventSink: AsyncStream<MultiplexerEvent>.Continuation

    var sessions: [PeerID: PeerSession] = [:]
    private var lastDialID: UInt64 = 0
    var isClosed = false
    /// Set when the multiplexer was given a tracker.
    var presence: PresenceExchange?

    /// - Parameter presence: the tracker to feed with this peer's links and the mesh's reports;
    ///   its peer must be `localPeer`.
    public init(localPeer: PeerID, configuration: SessionConfiguration = SessionConfiguration(), presence: PresenceTracker? = nil) {
        precondition(presence.map { $0.peer == localPeer } ?? true, "the presence tracker belongs to another peer")
        self.localPeer = localPeer
        self.configuration = configuration
        self.presenceTracker = presence
        self.presence = presence.map { PresenceExchange(tracker: $0) }
        self.incarnation = UInt64.random(in: 1...UInt64.max)
        (events, eventSink) = AsyncStream.makeStream(of: MultiplexerEvent.self, bufferingPolicy: .bufferingNewest(256))
    }

    /// The session with `peer`, made if needed: messages sent before any link exists wait in it.
    /// Every session made so far, by peer id.
    public var allSessions: [PeerSession] {
        sessions.keys.sorted().map { sessions[$0]! }
    }

    public func session(with peer: PeerID) -> PeerSession {
        if let session = sessions[peer] { return session }
        let sink = eventSink
        let session = PeerSession(
            localPeer: localPeer, peer: peer, configuration: configuration, needsLink: { sink.yield(.needsLink($0)) },
            presenceReceived: presenceReceiver(from: peer)
        )
        sessions[peer] = session
        return session
    }

    /// Says hello on a link this side dialled (`.dialer`) or accepted (`.acceptor`), waits for the
    /// peer's, and binds the link to the peer's session, which then owns it. Throws
    /// `LinkAdmissionError` (and closes the link) if the hello does not come or is not valid.
    ///
    /// `mayBind`, asked once the peer has said hello, can refuse the link (`.notAdmitted`): a
    /// caller that limits links decides there, never across the wait for a hello. (Held across
    /// it, a limit's lock deadlocks two peers that dial each other at once: each side's lock
    /// waits on one link for the hello the other side's lock holds back on the other link.)
    @discardableResult
    public nonisolated func add(
        _ link: any Link, as role: LinkRole, mayBind: @Sendable (PeerID) async -> Bool = { _ in true }
    ) async throws(LinkAdmissionError) -> PeerSession {
        guard let dialID = await dialID(for: role) else {
            link.close()
            throw .multiplexerClosed
        }
        let activity = LinkActivity()
        let channel = MessageChannel(
            ActivityRecordingLink(link, activity: activity),
            maximumMessageSize: configuration.maximumMessageSize + SessionFrame.dataOverhead
        )
        let ours = LinkHello(peer: localPeer, incarnation: incarnation, role: role, dialID: dialID, receiveWindow: configuration.window)
        do {
            try await channel.send(SessionFrame.hello(ours).encoded())
        } catch {
            channel.close()
            throw refused(.closedBeforeHello(link: link.description))
        }

        // A stalled hello must never wedge the caller: close the link when it is late.
        let timeout = configuration.helloTimeout
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { channel.close() }
        }
        let started = ContinuousClock.now
        var frames = channel.incoming.makeAsyncIterator()
        let first = await frames.next()
        timer.cancel()
        guard let first else {
            if let violation = channel.peerViolation { throw refused(.fragmentViolation(link: link.description, violation)) }
            if ContinuousClock.now - started >= timeout { throw refused(.helloTimedOut(link: link.description, after: timeout)) }
            throw refused(.closedBeforeHello(link: link.description))
        }
        let theirs: LinkHello
        do throws(SessionFrameError) {
            guard case .hello(let hello) = try SessionFrame(decoding: first) else { throw .missingHello }
            guard hello.role != role else { throw .roleConflict }
            guard hello.peer != localPeer else { throw .selfLink }
            // Over a secure link the handshake has proven who is at the other end: the hello may
            // not claim anyone else.
            if let secure = link as? SecureLink, secure.peer.peerID != hello.peer {
                throw .unauthenticatedPeer(claimed: hello.peer, authenticated: secure.peer.peerID)
            }
            guard hello.receiveWindow >= 1 else { throw .windowTooSmall(hello.receiveWindow) }
            theirs = hello
        } catch {
            channel.close()
            throw refused(.peerViolation(link: link.description, error))
        }

        guard await mayBind(theirs.peer) else {
            channel.close()
            throw refused(.notAdmitted(link: link.description, peer: theirs.peer))
        }
        let session = await session(with: theirs.peer)
        let dialer = role == .dialer ? localPeer : theirs.peer
        let linkDialID = role == .dialer ? dialID : theirs.dialID
        eventSink.yield(.linkBound(peer: theirs.peer, kind: link.kind))
        guard let number = await session.attach(channel, activity: activity, dialer: dialer, dialID: linkDialID, hello: theirs) else { return session }
        Task { [frames, weak self] in
            var frames = frames
            while let frame = await frames.next() { await session.receive(frame, on: number) }
            await session.linkEnded(number, violation: channel.peerViolation)
            await self?.presenceLinksChanged(session)
        }
        await presenceLinksChanged(session)
        return session
    }

    /// The dialer's number for a new link (zero for an accepted one); nil once closed.
    private func dialID(for role: LinkRole) -> UInt64? {
        guard !isClosed else { return nil }
        guard role == .dialer else { return 0 }
        lastDialID += 1
        return lastDialID
    }

    private nonisolated func refused(_ error: LinkAdmissionError) -> LinkAdmissionError {
        eventSink.yield(.linkRefused(error))
        return error
    }

    /// Closes the session with `peer` and every link it holds, and forgets it: a link the peer
    /// opens later (if it is still let in) starts a new session. For a peer whose credential
    /// expired or was revoked.
    public func cut(_ peer: PeerID) async {
        guard let session = sessions.removeValue(forKey: peer) else { return }
        await session.close()
    }

    /// Closes every session and refuses new links.
    public func close() async {
        isClosed = true
        stopPresence()
        for session in sessions.values { await session.close() }
        eventSink.finish()
    }
}
