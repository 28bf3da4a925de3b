import ArcusMesh

extension CloudTransport {
    /// Says on the presence subject that this peer is here, or leaving.
    func announce(_ kind: CloudAnnouncement.Kind) {
        let storing = state.withLock { $0.online ? $0.storing : nil }
        guard let storing, let connection = relayConnection.withLock({ $0 }) else { return }
        let announcement = CloudAnnouncement(kind, peer: peer, instance: instance, storesFrames: storing)
        try? connection.publish(subjects.presence, announcement.encoded)
    }

    /// An announcement from the presence subject (a libnats delivery thread).
    func heard(_ payload: [UInt8]) {
        guard let announcement = CloudAnnouncement(decoding: payload), announcement.peer != peer else { return }
        let endpoint = endpoint(of: announcement.peer)
        let (events, stale, greet) = state.withLock { state -> ([TransportEvent], [CloudLink], Bool) in
            guard state.phase == .running else { return ([], [], false) }
            let known = state.peers[announcement.peer]
            switch announcement.kind {
            case .here:
                state.departed.remove(announcement.peer)
                state.everAnnounced.insert(announcement.peer)
                state.peers[announcement.peer] = Announced(
                    instance: announcement.instance, lastHeard: .now, storesFrames: announcement.storesFrames
                )
                guard let known else { return ([.peerAppeared(endpoint)], [], true) }
                guard known.instance != announcement.instance else { return ([], [], false) }
                // A new run of the peer: links to its earlier run can never be read again.
                let stale = state.links.values.filter { $0.remote == announcement.peer && $0.remoteInstance != announcement.instance }
                return ([.peerLost(endpoint), .peerAppeared(endpoint)], stale, true)
            case .leaving:
                guard let known, known.instance == announcement.instance else { return ([], [], false) }
                state.peers[announcement.peer] = nil
                state.departed.insert(announcement.peer)
                return ([.peerLost(endpoint)], [], false)
            }
        }
        for link in stale { link.lost(because: "the peer restarted", tellPeer: false) }
        for event in events { eventSink.yield(event) }
        // A newcomer hears this peer at once rather than at its next turn.
        if greet { announce(.here) }
    }

    /// Peers silent for `peerExpiry` are out of reach. Their links stay: with store-and-forward
    /// their frames wait, and without it the session finds them dead on its own.
    ///
    /// Like a session's heartbeats, silence is counted only for time this process was awake to
    /// hear: when a busy CPU held the maintenance turn back, the lateness is not the peers' fault.
    func expireSilentPeers() {
        let now = ContinuousClock.now
        let lost = state.withLock { state -> [PeerID] in
            guard state.phase == .running else { return [] }
            if let last = state.lastMaintenance, now - last > settings.announceInterval * 2 {
                let asleep = now - last - settings.announceInterval
                for peer in state.peers.keys { state.peers[peer]!.lastHeard += asleep }
            }
            state.lastMaintenance = now
            let silent = state.peers.filter { now - $0.value.lastHeard > settings.peerExpiry }.map(\.key)
            for peer in silent { state.peers[peer] = nil }
            return silent
        }
        for peer in lost { eventSink.yield(.peerLost(endpoint(of: peer))) }
    }
}
