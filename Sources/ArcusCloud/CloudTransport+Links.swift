import ArcusMesh

extension CloudTransport {
    public func open(to endpoint: TransportEndpoint) async throws -> any Link {
        guard endpoint.kind == .cloud else { throw TransportError.wrongKind(endpoint, expected: .cloud) }
        guard let bytes = Hex.decode(endpoint.address), let target = PeerID(bytes: bytes) else {
            throw TransportError.unknownEndpoint(endpoint)
        }
        let targetInstance = try await announcedInstance(of: target, endpoint: endpoint)
        let key = CloudLinkKey(peer: target, id: UInt64.random(in: 1...UInt64.max), dialledHere: true)
        let link: CloudLink = try await withCheckedThrowingContinuation { continuation in
            let open = state.withLock { state -> Result<[UInt8], TransportError> in
                guard state.phase == .running else { return .failure(.notRunning(transport: "cloud")) }
                state.dials[key] = PendingDial(continuation: continuation)
                let body = instance.bigEndianBytes + targetInstance.bigEndianBytes
                return .success(CloudFrame(.open, fromDialler: true, link: key.id, value: UInt32(settings.window), body: body).encoded)
            }
            switch open {
            case .failure(let error):
                continuation.resume(throwing: error)
            case .success(let frame):
                guard publish(frame, to: target) else {
                    failDial(key, TransportError.unreachable(endpoint))
                    return
                }
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

    /// The run of `target` to dial. A peer not heard yet gets `settings.announcementWait` to be
    /// heard (a transport that has just started has not heard its peers' next turn), then the
    /// dial fails with what is known of it.
    private func announcedInstance(of target: PeerID, endpoint: TransportEndpoint) async throws -> UInt64 {
        let deadline = ContinuousClock.now + settings.announcementWait
        while true {
            let known = try state.withLock { state throws(TransportError) -> UInt64? in
                guard state.phase == .running else { throw .notRunning(transport: "cloud") }
                if let announced = state.peers[target] { return announced.instance }
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
    func received(_ message: NATSMessage) {
        guard let sender = subjects.sender(of: message.subject, addressedTo: peer) else { return }
        let frame: CloudFrame
        do {
            frame = try CloudFrame(decoding: message.payload, maximumBody: max(settings.mtu, 16))
        } catch {
            state.withLock { $0.frameErrors += 1 }
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
                link.received(frame)
            } else if frame.kind != .close {
                // A link this run does not know (made with an earlier run, or already closed):
                // tell the sender, as a TCP reset would. Never answer a close, so two ends that
                // both forgot a link do not echo forever.
                reset(key)
            }
        default:
            state.withLock { $0.frameErrors += 1 }
        }
    }

    private func accept(_ frame: CloudFrame, key: CloudLinkKey) {
        let diallerInstance = UInt64(bigEndianBytes: frame.body.prefix(8))
        let target = UInt64(bigEndianBytes: frame.body.dropFirst(8))
        let link = state.withLock { state -> CloudLink?? in
            guard state.phase == .running, target == instance else { return .some(nil) }
            guard state.links[key] == nil else { return .none }
            let remoteStores = state.peers[key.peer]?.storesFrames ?? false
            let link = CloudLink(
                key: key, remoteInstance: diallerInstance, credit: Self.credit(frame.value), settings: settings,
                storesFramesFor: state.storing && remoteStores ? settings.storedFramesMaxAge : nil, relay: linkRelay
            )
            state.links[key] = link
            return .some(link)
        }
        switch link {
        case .none:
            return  // the same open, delivered again
        case .some(nil):
            reset(key)
        case .some(let link?):
            let accept = CloudFrame(.accept, fromDialler: false, link: key.id, value: UInt32(settings.window), body: instance.bigEndianBytes)
            guard publish(accept.encoded, to: key.peer) else {
                link.lost(because: "the relay connection refused the accept", tellPeer: false)
                return
            }
            eventSink.yield(.linkAccepted(link, from: endpoint(of: key.peer)))
        }
    }

    private func completeDial(_ frame: CloudFrame, key: CloudLinkKey) {
        let result = state.withLock { state -> (CloudLink, PendingDial)? in
            guard state.phase == .running, let dial = state.dials.removeValue(forKey: key) else { return nil }
            let remoteStores = state.peers[key.peer]?.storesFrames ?? false
            let link = CloudLink(
                key: key, remoteInstance: UInt64(bigEndianBytes: frame.body), credit: Self.credit(frame.value), settings: settings,
                storesFramesFor: state.storing && remoteStores ? settings.storedFramesMaxAge : nil, relay: linkRelay
            )
            state.links[key] = link
            return (link, dial)
        }
        guard let (link, dial) = result else {
            reset(key)  // accepted after the dial gave up
            return
        }
        dial.end(.success(link))
    }

    private func reset(_ key: CloudLinkKey) {
        _ = publish(CloudFrame(.close, fromDialler: key.dialledHere, link: key.id).encoded, to: key.peer)
    }

    /// The credit a peer announces, bounded: a window is never more than 16 MiB.
    private static func credit(_ announced: UInt32) -> Int { min(Int(announced), 16 << 20) }
}
