import ArcusMesh
import Foundation

extension CloudTransport {
    /// Says on the presence subject, signed, that this peer is here, or leaving.
    func announce(_ kind: CloudAnnouncement.Kind) {
        // Each announcement later than the one before, whatever the wall clock does meanwhile.
        let wallClock = UInt64(max(0, Date().timeIntervalSince1970 * 1_000))
        let ready = state.withLock { state -> (storing: Bool, time: UInt64)? in
            guard state.online else { return nil }
            state.lastAnnouncementTime = max(wallClock, state.lastAnnouncementTime + 1)
            return (state.storing, state.lastAnnouncementTime)
        }
        guard let ready, let connection = relayConnection.withLock({ $0 }) else { return }
        let announcement = CloudAnnouncement(
            kind, by: identity, instance: instance, time: ready.time, storesFrames: ready.storing, mesh: subjects.mesh
        )
        try? connection.publish(subjects.presence, announcement.encoded)
    }

    /// A message on the presence subject (a libnats delivery thread). Taken only when it is a
    /// peer's own (its signature) and later than the last taken from that peer, so that neither
    /// a forgery nor a recording replayed can say that a peer restarted or left.
    func heard(_ payload: [UInt8]) {
        guard let announcement = CloudAnnouncement(decoding: payload) else {
            let older = CloudAnnouncement.isOlderVersion(payload)
            let warnNow = state.withLock { state -> Bool in
                state.frameErrors += 1
                guard older, !state.warnedOlderVersion else { return false }
                state.warnedOlderVersion = true
                return true
            }
            if warnNow {
                warn("cloud relay: a peer on this mesh's subjects runs an older Arcus, whose announcements are not signed; "
                    + "it is ignored until it is upgraded (this is said once)")
            }
            return
        }
        let remote = announcement.peer
        guard remote != peer else { return }
        // Stale before anything is spent on the signature: no later than the last taken.
        guard isLater(announcement) else {
            state.withLock { $0.forgeries += 1 }
            return
        }
        guard announcement.isSigned(on: subjects.mesh) else {
            state.withLock { $0.forgeries += 1 }
            return
        }
        let endpoint = endpoint(of: remote)
        let heard = state.withLock { state -> Heard in
            guard state.phase == .running else { return Heard() }
            let known = state.peers[remote]
            // Checked again under the lock: another thread may have taken a later one meanwhile.
            if let known, announcement.time <= known.time {
                state.forgeries += 1
                return Heard()
            }
            switch announcement.kind {
            case .here:
                if known == nil && state.peers.count >= settings.maximumPeers {
                    defer { state.warnedTooManyPeers = true }
                    return Heard(tooMany: !state.warnedTooManyPeers)
                }
                state.departed.remove(remote)
                if state.everAnnounced.count < settings.maximumPeers { state.everAnnounced.insert(remote) }
                state.peers[remote] = Announced(
                    instance: announcement.instance, lastHeard: .now, storesFrames: announcement.storesFrames,
                    time: announcement.time, publicKey: announcement.publicKey
                )
                // Links to this run may have been made before this peer was heard (its open can
                // overtake its announcement): they learn now whether its frames wait for it.
                let current = state.links.values.filter { $0.remote == remote && $0.remoteInstance == announcement.instance }
                let stored = state.storedFramesWindow(peerStores: announcement.storesFrames, maximumAge: settings.storedFramesMaxAge)
                guard let known else { return Heard(events: [.peerAppeared(endpoint)], current: current, stored: stored, greet: true) }
                guard known.instance != announcement.instance else { return Heard(current: current, stored: stored) }
                // A new run of the peer: links to its earlier run can never be read again.
                let stale = state.links.values.filter { $0.remote == remote && $0.remoteInstance != announcement.instance }
                return Heard(events: [.peerLost(endpoint), .peerAppeared(endpoint)], stale: stale, greet: true)
            case .leaving:
                guard let known, known.instance == announcement.instance else { return Heard() }
                state.peers[remote] = nil
                if state.departed.count < settings.maximumPeers { state.departed.insert(remote) }
                return Heard(events: [.peerLost(endpoint)])
            }
        }
        if heard.tooMany {
            warn("cloud relay: more than \(settings.maximumPeers) peers announce themselves on this mesh's subjects; "
                + "the others are ignored (this is said once)")
        }
        for link in heard.current { link.peerStoresFrames(for: heard.stored) }
        for link in heard.stale { link.lost(because: "the peer restarted", tellPeer: false) }
        for event in heard.events { eventSink.yield(event) }
        // A newcomer hears this peer at once rather than at its next turn.
        if heard.greet { announce(.here) }
    }

    /// What taking an announcement changed, acted on outside the state's lock.
    private struct Heard {
        var events: [TransportEvent] = []
        /// Links to the peer's announced run, and how long frames on them wait in the stream.
        var current: [CloudLink] = []
        var stored: Duration?
        /// Links to an earlier run of the peer.
        var stale: [CloudLink] = []
        var greet = false
        var tooMany = false
    }

    /// Whether `announcement` is later than the last one taken from its peer (or the peer is not
    /// known now). A peer forgotten (expired, or left) starts afresh: a peer whose clock went
    /// back across a restart is heard again once its earlier run has gone quiet.
    private func isLater(_ announcement: CloudAnnouncement) -> Bool {
        state.withLock { state in
            guard let known = state.peers[announcement.peer] else { return true }
            return announcement.time > known.time
        }
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
