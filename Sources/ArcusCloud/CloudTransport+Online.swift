import ArcusMesh

extension CloudTransport {
    /// Subscribes to this peer's presence and link subjects once the relay answers: at start if
    /// it does, otherwise on the first maintenance turn after it does. Store-and-forward needs the
    /// mesh's stream, which only a connected client can create.
    func comeOnlineIfConnected() {
        guard let connection = relayConnection.withLock({ $0 }), connection.isConnected else { return }
        let proceed = state.withLock { state in
            guard state.phase == .running, !state.online else { return false }
            state.online = true
            return true
        }
        guard proceed else { return }
        var subscriptions: [NATSSubscription] = []
        var storing = false
        do {
            subscriptions.append(try connection.subscribe(subjects.presence) { [weak self] message in
                self?.heard(message.payload)
            })
            let linkHandler: @Sendable (NATSMessage) -> Void = { [weak self] message in
                self?.received(message)
            }
            if settings.storeAndForward, let reader = storingReader(on: connection, handler: linkHandler) {
                subscriptions.append(reader)
                storing = true
            } else {
                subscriptions.append(try connection.subscribe(subjects.links(to: peer), linkHandler))
            }
        } catch {
            for subscription in subscriptions { subscription.cancel() }
            state.withLock { $0.online = false }
            warn("cloud relay: cannot subscribe to this peer's subjects (\(error)); trying again in \(settings.announceInterval)")
            return
        }
        let stillRunning = state.withLock { state in
            guard state.phase == .running else { return false }
            state.subscriptions = subscriptions
            state.storing = storing
            return true
        }
        guard stillRunning else {
            for subscription in subscriptions { subscription.cancel() }
            return
        }
        announce(.here)
    }

    /// Reads this peer's link subjects through the mesh's stream, made or updated here with this
    /// peer's limits; nil (after one warning) when the relay has no JetStream.
    private func storingReader(on connection: NATSConnection, handler: @escaping @Sendable (NATSMessage) -> Void) -> NATSSubscription? {
        let stream = NATSStreamConfig(
            name: subjects.streamName, subjects: [subjects.allLinks],
            maxAge: settings.storedFramesMaxAge, maxBytes: settings.storedFramesMaxBytes
        )
        do {
            try connection.ensureStream(stream)
            return try connection.subscribeOrdered(subjects.links(to: peer), handler)
        } catch {
            let first = state.withLock { state in
                defer { state.warnedNoJetStream = true }
                return !state.warnedNoJetStream
            }
            if first {
                warn("cloud relay: store-and-forward is off, frames for peers that are away are not kept: \(error)")
            }
            return nil
        }
    }
}
