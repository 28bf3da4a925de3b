import ArcusMesh

extension CloudTransport {
    /// Says what happens to the relay connection: lost (the client reconnects on its own and
    /// buffers frames), back, and the errors the relay reports.
    func reportConnectionChanges(of connection: NATSConnection) {
        let events = connection.events
        Task { [weak self] in
            for await event in events {
                guard let self else { return }
                switch event {
                case .disconnected:
                    warn("cloud relay: lost the connection to \(relayDescription); reconnecting, frames are buffered meanwhile")
                case .reconnected:
                    let wasWarned = state.withLock { state in
                        defer { state.warnedOffline = false; state.lastConnected = .now }
                        return state.warnedOffline
                    }
                    note("cloud relay: connected to \(relayDescription)" + (wasWarned ? " after all" : ""))
                case .error(let text):
                    warn("cloud relay: \(text)")
                case .closed:
                    return
                }
            }
        }
    }

    /// One warning when the relay has not answered for a while (a wrong address, password or
    /// certificate, or no network), with the client's own reason; the client keeps trying.
    func warnIfStillOffline() {
        guard let connection = relayConnection.withLock({ $0 }) else { return }
        let now = ContinuousClock.now
        let connected = connection.isConnected
        let warn = state.withLock { state -> Bool in
            if connected {
                state.lastConnected = now
                state.warnedOffline = false
                return false
            }
            guard state.phase == .running, !state.warnedOffline, now - state.lastConnected > settings.connection.connectTimeout * 2 else { return false }
            state.warnedOffline = true
            return true
        }
        guard warn else { return }
        let reason = connection.lastError.map { ": \($0)" } ?? ""
        self.warn("cloud relay: not connected to \(relayDescription)\(reason); still trying. Check that nats-server runs there, "
            + "and the user and password in the URL or the credentials file (arcus doctor --cloud URL checks them)")
    }

    /// The relay's URLs without their passwords, for logs.
    var relayDescription: String {
        settings.connection.urls.map(NATSConnection.withoutCredentials).joined(separator: ", ")
    }
}
