import ArcusMesh
import ArcusSync
import Logging
import Synchronization

extension Agent {
    /// Starts `transport` and serves its events until it stops: accepted links are secured and
    /// handed to the multiplexer; a peer that appears is kept dialled while it is announced
    /// (`keepDialled`) — unless it advertises an id (or, on BLE, an id prefix) lower than ours,
    /// for then it dials us, so that two agents do not both dial (the multiplexer copes if they
    /// do; see `TransportEndpoint.isDialled(by:)`). Static peers advertise no id until the
    /// handshake, so they are dialled whatever theirs is.
    /// Starts every transport, once (later calls wait for the first): `run` does, and so does
    /// `arcus agent` before it says it is ready, so that the ready line names only transports
    /// that run.
    @discardableResult
    func startTransports() async -> [TransportStarts.Outcome] {
        await transportStarts.startOnce(transports, logger: logger)
    }

    /// Serves a started transport's events until it stops.
    func runTransport(_ transport: any Transport) async {
        let kind = transport.kind
        var dials: [String: Task<Void, Never>] = [:]
        // A transport with few links dials within its budget (peers with an advertised id);
        // the others keep every announced peer dialled.
        let scarce = kind.isScarce ? ScarcePeersInRange() : nil
        await withDiscardingTaskGroup { group in
            if let scarce { group.addTask { await self.holdScarceLinks(transport, inRange: scarce) } }
            for await event in transport.events {
                switch event {
                case .linkAccepted(let link, let endpoint, let pending):
                    group.addTask { await self.admit(link, as: .responder, from: endpoint, pending: pending) }
                case .peerAppeared(let endpoint) where scarce != nil && endpoint.peer != nil:
                    scarce?.appeared(endpoint)
                case .peerLost(let endpoint) where scarce != nil && endpoint.peer != nil:
                    scarce?.lost(endpoint)
                case .peerAppeared(let endpoint):
                    guard endpoint.isDialled(by: identity.peerID) else { continue }
                    dials[endpoint.address]?.cancel()
                    dials[endpoint.address] = Task { await self.keepDialled(endpoint, on: transport) }
                case .peerLost(let endpoint):
                    logger.debug("peer lost", metadata: ["endpoint": "\(endpoint)"])
                    dials.removeValue(forKey: endpoint.address)?.cancel()
                }
            }
            group.cancelAll()
        }
        for dial in dials.values { dial.cancel() }
    }

    /// Keeps a link of `transport`'s kind to the peer at `endpoint` while it is announced: dials
    /// it, and dials again whenever the dial or the handshake fails, or the peer's session is left
    /// with no link of this kind (the peer restarted, the link broke), waiting longer after each
    /// failure (`DialBackoff`). One log line when a peer cannot be reached, one when it is.
    func keepDialled(_ endpoint: TransportEndpoint, on transport: any Transport) async {
        var backoff = DialBackoff()
        var failures = 0
        while !Task.isCancelled {
            var reached: PeerID?
            do {
                let link = try await transport.open(to: endpoint)
                reached = await admit(link, as: .initiator, from: endpoint)
            } catch {
                if failures == 0 {
                    // Rate-limited too: whoever can announce endpoints (mDNS, the relay) decides how many fail.
                    strangerLog.log(
                        .notice, "could not dial", "could not dial; will keep trying", source: endpoint.address,
                        metadata: ["endpoint": "\(endpoint)", "error": "\(error)"]
                    )
                }
            }
            guard let peer = reached else {
                failures += 1
                try? await Task.sleep(for: backoff.next())
                continue
            }
            if failures > 0 {
                logger.info("dialled", metadata: ["endpoint": "\(endpoint)", "attempts": "\(failures + 1)"])
            }
            failures = 0
            backoff.reset()
            let session = await multiplexer.session(with: peer)
            while !Task.isCancelled, await session.linkStatuses.contains(where: { $0.kind == transport.kind }) {
                try? await Task.sleep(for: DialBackoff.linkCheckInterval)
            }
            try? await Task.sleep(for: backoff.next())
        }
    }

    /// Secures `link` with the mesh credential, binds it to the peer's mesh session, and starts
    /// syncing over that mesh session the first time the peer is seen. Returns the peer, or nil
    /// when the link was refused (and closed).
    ///
    /// An accepted link comes with its `pending` slot: the handshake gets the time the slot has
    /// left (its transport hello used the rest), and the slot is settled with how it ended, which
    /// `PendingHandshakes` counts; a dialled link's handshake is counted here. Failures are logged
    /// through `strangerLog`: whoever opens links decides how many fail, not how many lines the
    /// agent writes.
    @discardableResult
    func admit(
        _ transportLink: any Link, as role: HandshakeRole, from endpoint: TransportEndpoint, pending: PendingHandshake? = nil
    ) async -> PeerID? {
        let kind = transportLink.kind
        let link = CountedLink(
            transportLink, sent: metrics.linkBytes(kind, direction: "sent"), received: metrics.linkBytes(kind, direction: "received")
        )
        func ended(_ outcome: PendingHandshakes.Outcome) {
            pending?.settle(outcome)
            // The agent's own gate counts its slots; links of a transport given another gate (a
            // program embedding the agent, a test) and dialled links are counted here.
            if pending?.isHeld(by: pendingHandshakes) != true {
                metrics.count(.settled(kind, source: endpoint.address, outcome))
            }
        }
        guard let connector else {
            ended(.failed)
            strangerLog.log(
                .warning, "refused a link: no mesh credential",
                "refused a link: no mesh credential is configured (set mesh_secret_file, or certificate_file and authority_file, in --config)",
                source: endpoint.address, metadata: ["endpoint": "\(endpoint)"]
            )
            link.close()
            return nil
        }
        let secured: SecureConnector.SecuredLink
        do {
            secured = try await connector.secure(
                link, as: role, peer: role == .initiator ? endpoint.peer : nil, for: engine, timeout: pending?.remaining
            )
            ended(.completed)
        } catch {
            if case HandshakeError.timedOut = error { ended(.timedOut) } else { ended(.failed) }
            strangerLog.log(.warning, "handshake failed", "handshake failed", source: endpoint.address, metadata: ["endpoint": "\(endpoint)", "error": "\(error)"])
            link.close()
            return nil
        }
        let peer = secured.link.peer
        if !admission.isEmpty {
            let decision = await admission.decide(peer, transport: kind.rawValue)
            guard decision.admitted else {
                strangerLog.log(
                    .warning, "refused a peer by the connection policy", "refused \(peer) by the connection policy (\(decision.by))",
                    source: peer.peerID.description,
                    metadata: ["peer": "\(peer.peerID)", "by": "\(decision.by)", "reason": "\(decision.reason ?? "")"]
                )
                secured.link.close()
                return nil
            }
        }
        // On a scarce transport a slot is taken, under a lock, once the peer has said hello, and
        // held until the link is bound: links admitted at once cannot together pass the limit.
        let reserved = Mutex<PeerID?>(nil)
        @Sendable func mayBind(_ remote: PeerID) async -> Bool {
            guard kind.isScarce else { return true }
            return await scarceAdmissions.withLock {
                guard await hasScarceRoom(for: remote, kind: kind) else {
                    logger.debug("refused a link: every \(kind.rawValue) slot is taken", metadata: ["peer": "\(remote)"])
                    return false
                }
                scarceReservations.withLock { $0[remote, default: 0] += 1 }
                reserved.withLock { $0 = remote }
                return true
            }
        }
        func bind() async -> PeerSession? {
            defer {
                if let remote = reserved.withLock({ $0 }) {
                    scarceReservations.withLock { reservations in
                        reservations[remote, default: 1] -= 1
                        if reservations[remote] == 0 { reservations[remote] = nil }
                    }
                }
            }
            do {
                return try await multiplexer.add(secured.link, as: role == .initiator ? .dialer : .acceptor, mayBind: mayBind)
            } catch LinkAdmissionError.notAdmitted {
                return nil  // logged by mayBind, at debug: a full radio is no fault
            } catch {
                strangerLog.log(
                    .warning, "link refused by the multiplexer", "link refused by the multiplexer", source: peer.peerID.description,
                    metadata: ["peer": "\(peer.peerID)", "error": "\(error)"]
                )
                secured.link.close()
                return nil
            }
        }
        let bound = await bind()
        guard let session = bound else { return nil }
        watchExpiry(of: peer)
        let isNew = syncedPeers.withLock { $0.insert(peer.peerID).inserted }
        if isNew {
            // system:data_sync_info says whether a session runs: its observers read it again.
            store.virtualCollectionsChanged()
            Task {
                await self.runSync(over: session, with: peer, connector: connector)
                _ = self.syncedPeers.withLock { $0.remove(peer.peerID) }
                self.store.virtualCollectionsChanged()
            }
        }
        return peer.peerID
    }

    /// Runs one sync session per life of the peer, for as long as its mesh session lives: when the
    /// peer restarts, the conversation with its earlier life ends, and so does the sync session on
    /// it; the next one starts from the hellos, which tell the peer what this side already has.
    /// A sync session that ends while the peer lives (a protocol violation) is not restarted until
    /// the peer restarts, so that a broken peer cannot make the agent loop.
    func runSync(over session: PeerSession, with peer: AuthenticatedPeer, connector: SecureConnector) async {
        var generation: Int?
        while let conversation = await session.conversation(after: generation) {
            generation = conversation.generation
            if conversation.generation > 0 {
                logger.info("peer restarted; syncing afresh", metadata: ["peer": "\(peer.peerID)"])
            }
            let sync = connector.connect(conversation, authenticatedAs: peer, to: engine)
            await sync.waitUntilEnded()
        }
    }

    /// Follows every mesh session (one watcher each: a session's events have one consumer) to
    /// count its links by transport and its failovers.
    func watchSessions() async {
        var watched: Set<PeerID> = []
        for await event in multiplexer.events {
            guard case .linkBound(let peer, _) = event, watched.insert(peer).inserted else { continue }
            let session = await multiplexer.session(with: peer)
            Task { await self.watch(session) }
        }
    }

    private func watch(_ session: PeerSession) async {
        var lostActive = false
        for await event in session.events {
            switch event {
            case .linkAdded(let status):
                metrics.links(status.kind).increment(by: 1.0)
            case .linkRemoved(let status, _):
                metrics.links(status.kind).decrement(by: 1.0)
                if status.isActive { lostActive = true }
            case .activeLinkChanged(let status?):
                // A failover: the active link died and another took over.
                if lostActive { metrics.failovers(status.kind).increment() }
                lostActive = false
            default:
                break
            }
        }
    }
}
