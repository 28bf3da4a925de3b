import ArcusMesh

extension CloudTransport {
    public func open(to endpoint: TransportEndpoint) async throws -> any Link {
        guard endpoint.kind == .cloud else { throw TransportError.wrongKind(endpoint, expected: .cloud) }
        guard let bytes = Hex.decode(endpoint.address), let target = PeerID(bytes: bytes) else {
            throw TransportError.unknownEndpoint(endpoint)
        }
        let announced = try await announcement(of: target, endpoint: endpoint)
        guard let pairKey = pairKey(with: announced.publicKey) else { throw TransportError.unreachable(endpoint) }
        let seal = CloudFrameSeal(key: pairKey, local: peer, localInstance: instance, remote: target, remoteInstance: announced.instance)
        let link: CloudLink = try await withCheckedThrowingContinuation { continuation in
            // The id is taken and the open published under one lock, so that opens reach the
            // peer in id order (it takes each dialler's opens in increasing order only).
            let outcome = linkCounter.withLock { counter -> Result<CloudLinkKey, TransportError> in
                counter += 1
                let key = CloudLinkKey(peer: target, id: counter, dialledHere: true)
                let registered = state.withLock { state -> Bool in
                    guard state.phase == .running else { return false }
                    state.dials[key] = PendingDial(continuation: continuation, seal: seal, endpoint: endpoint)
                    return true
                }
                guard registered else { return .failure(.notRunning(transport: "cloud")) }
                let body = instance.bigEndianBytes + announced.instance.bigEndianBytes + identity.publicKey.bytes
                let open = CloudFrame(.open, fromDialler: true, link: key.id, value: UInt32(settings.window), body: body)
                guard publish(seal.seal(open), to: target) else {
                    // Nothing went out, so nothing can answer: the dial is this caller's to end.
                    state.withLock { _ = $0.dials.removeValue(forKey: key) }
                    return .failure(.unreachable(endpoint))
                }
                return .success(key)
            }
            switch outcome {
            case .failure(let error):
                continuation.resume(throwing: error)
            case .success(let key):
                let timeout = Task { [weak self, limit = settings.dialTimeout] in
                    guard (try? await Task.sleep(for: limit)) != nil else { return }
                    self?.failDial(key, TransportError.unreachable(endpoint))
                }
                // The accept may have come already; then the dial is gone and so is the need.
                let pending = state.withLock { state -> Bool in
                    guard state.dials[key] != nil else { return false }
                    state.dials[key]?.timeout = timeout
                    return true
                }
                if !pending { timeout.cancel() }
            }
        }
        return link
    }

    /// The run of `target` to dial and its key. A peer not heard yet gets
    /// `settings.announcementWait` to be heard (a transport that has just started has not heard
    /// its peers' next turn), then the dial fails with what is known of it.
    private func announcement(of target: PeerID, endpoint: TransportEndpoint) async throws -> Announced {
        let deadline = ContinuousClock.now + settings.announcementWait
        while true {
            let known = try state.withLock { state throws(TransportError) -> Announced? in
                guard state.phase == .running else { throw .notRunning(transport: "cloud") }
                if let announced = state.peers[target] { return announced }
                if state.departed.contains(target) { throw .peerStopped(endpoint) }
                return nil
            }
            if let known { return known }
            guard ContinuousClock.now < deadline else {
                let heardBefore = state.withLock { $0.everAnnounced.contains(target) }
                throw heardBefore ? TransportError.unreachable(endpoint) : TransportError.unknownEndpoint(endpoint)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    private func failDial(_ key: CloudLinkKey, _ error: TransportError) {
        let dial = state.withLock { $0.dials.removeValue(forKey: key) }
        dial?.end(.failure(error))
    }

    /// A message on this peer's link subjects (a libnats delivery thread, in the relay's order).
    /// Only a frame whose tag is its sender's for the link it names goes any further; others
    /// are dropped and counted, and never answered.
    func received(_ message: NATSMessage) {
        guard let sender = subjects.sender(of: message.subject, addressedTo: peer) else { return }
        let frame: CloudFrame
        do {
            frame = try CloudFrame(decoding: message.payload, maximumBody: max(settings.mtu, CloudFrame.openBodySize))
        } catch {
            let warnNow = state.withLock { state -> Bool in
                state.frameErrors += 1
                guard case .unknownVersion(let version) = error, version < CloudFrame.version, !state.warnedOlderVersion else { return false }
                state.warnedOlderVersion = true
                return true
            }
            if warnNow { warn("cloud relay: \(error) (this is said once)") }
            return
        }
        let key = CloudLinkKey(peer: sender, id: frame.link, dialledHere: !frame.fromDialler)
        switch frame.kind {
        case .open where frame.fromDialler:
            accept(frame, key: key)
        case .accept where !frame.fromDialler:
            completeDial(frame, key: key)
        case .data, .credit, .close:
            if let link = state.withLock({ $0.links[key] }) {
                guard link.isFromPeer(frame) else { return forged() }
                link.received(frame)
            } else if frame.kind == .close {
                if key.dialledHere { refusedDial(frame, key: key) }
            } else {
                // A link this run does not know (made with an earlier run, or already closed):
                // tell the sender, as a TCP reset would, if the frame is its. Never answer a
                // close, so two ends that both forgot a link do not echo forever.
                reset(frame, key: key)
            }
        default:
            state.withLock { $0.frameErrors += 1 }
        }
    }

    private func forged() {
        state.withLock { $0.forgeries += 1 }
    }

    /// An open from the peer `key.peer`: taken when its tag is that peer's (the key in its body
    /// hashes to the sender's id), it names this run, it is the dialler's current run when that
    /// is known, and its id is higher than any taken from that run; then only if the peer has a
    /// pending handshake slot.
    private func accept(_ frame: CloudFrame, key: CloudLinkKey) {
        let diallerInstance = UInt64(bigEndianBytes: frame.body.prefix(8))
        let target = UInt64(bigEndianBytes: frame.body.dropFirst(8).prefix(8))
        // For an earlier run of this peer: whoever sent it has not heard this run yet.
        guard target == instance else { return }
        guard let publicKey = try? PeerPublicKey(bytes: frame.body.dropFirst(16)), publicKey.peerID == key.peer,
              let pairKey = pairKey(with: publicKey)
        else { return forged() }
        let seal = CloudFrameSeal(key: pairKey, local: peer, localInstance: instance, remote: key.peer, remoteInstance: diallerInstance)
        guard seal.opening.verifies(frame) else { return forged() }
        let fresh = state.withLock { state -> Bool in
            if let announced = state.peers[key.peer], announced.instance != diallerInstance { return false }
            if let taken = state.opensTaken[key.peer], taken.instance == diallerInstance, key.id <= taken.id { return false }
            return true
        }
        // An earlier run's open, or one taken already (delivered again, or replayed): not a new link.
        guard fresh else { return }
        guard let pending = pendingHandshakes.admit(.cloud, from: key.peer.description) else {
            _ = publish(seal.seal(CloudFrame(.close, fromDialler: false, link: key.id)), to: key.peer)
            return
        }
        let link = state.withLock { state -> CloudLink? in
            guard state.phase == .running, state.links[key] == nil else { return nil }
            if let taken = state.opensTaken[key.peer], taken.instance == diallerInstance, key.id <= taken.id { return nil }
            if state.opensTaken[key.peer] == nil && state.opensTaken.count >= settings.maximumPeers, let any = state.opensTaken.keys.first {
                state.opensTaken[any] = nil
            }
            state.opensTaken[key.peer] = (diallerInstance, key.id)
            let link = CloudLink(
                key: key, seal: seal, credit: Self.credit(frame.value), settings: settings,
                storesFramesFor: state.storedFramesWindow(peerStores: state.peers[key.peer]?.storesFrames ?? false, maximumAge: settings.storedFramesMaxAge),
                relay: linkRelay
            )
            state.links[key] = link
            return link
        }
        guard let link else {
            pending.settle(.failed)
            return
        }
        let accept = CloudFrame(.accept, fromDialler: false, link: key.id, value: UInt32(settings.window), body: instance.bigEndianBytes)
        guard publish(seal.seal(accept), to: key.peer) else {
            pending.settle(.failed)
            link.lost(because: "the relay connection refused the accept", tellPeer: false)
            return
        }
        eventSink.yield(.linkAccepted(link, from: endpoint(of: key.peer), pending: pending))
    }

    /// An accept for a dial of this side: taken when it comes from the run dialled, with its tag.
    private func completeDial(_ frame: CloudFrame, key: CloudLinkKey) {
        let result = state.withLock { state -> Result<(CloudLink, PendingDial), CloudLinkRefusal> in
            guard state.phase == .running else { return .failure(.ignored) }
            // Accepted already: delivered again, or replayed. Never a reason to reset the link.
            if let link = state.links[key] { return .failure(link.isFromPeer(frame) ? .ignored : .forged) }
            guard let dial = state.dials[key] else { return .failure(.noDial) }
            guard UInt64(bigEndianBytes: frame.body) == dial.seal.remoteInstance, dial.seal.opening.verifies(frame) else {
                return .failure(.forged)
            }
            state.dials[key] = nil
            let link = CloudLink(
                key: key, seal: dial.seal, credit: Self.credit(frame.value), settings: settings,
                storesFramesFor: state.storedFramesWindow(peerStores: state.peers[key.peer]?.storesFrames ?? false, maximumAge: settings.storedFramesMaxAge),
                relay: linkRelay
            )
            state.links[key] = link
            return .success((link, dial))
        }
        switch result {
        case .success(let (link, dial)): dial.end(.success(link))
        case .failure(.forged): forged()
        case .failure(.noDial): reset(frame, key: key)  // accepted after the dial gave up
        case .failure(.ignored): break
        }
    }

    /// A close for a dial of this side still waiting for its accept: the peer refused it (too
    /// many handshakes pending there). The dial fails now rather than at its timeout.
    private func refusedDial(_ frame: CloudFrame, key: CloudLinkKey) {
        let dial = state.withLock { state -> PendingDial? in
            guard let dial = state.dials[key], dial.seal.opening.verifies(frame) else { return nil }
            return state.dials.removeValue(forKey: key)
        }
        dial?.end(.failure(TransportError.unreachable(dial!.endpoint)))
    }

    /// Answers a frame for a link this run does not know with a close, when the frame's tag is
    /// the sender's current run's; anything else is dropped.
    private func reset(_ frame: CloudFrame, key: CloudLinkKey) {
        guard let announced = state.withLock({ $0.peers[key.peer] }), let pairKey = pairKey(with: announced.publicKey) else { return forged() }
        let seal = CloudFrameSeal(key: pairKey, local: peer, localInstance: instance, remote: key.peer, remoteInstance: announced.instance)
        guard seal.opening.verifies(frame) else { return forged() }
        _ = publish(seal.seal(CloudFrame(.close, fromDialler: key.dialledHere, link: key.id)), to: key.peer)
    }

    /// The credit a peer announces, bounded: a window is never more than 16 MiB.
    private static func credit(_ announced: UInt32) -> Int { min(Int(announced), 16 << 20) }
}

/// Why an accept made no link.
private enum CloudLinkRefusal: Error {
    case ignored, noDial, forged
}
