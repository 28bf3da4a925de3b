import ArcusCloud

extension Doctor {
    /// Whether the relay in `--cloud` answers, with these credentials, and offers JetStream
    /// (store-and-forward). It connects and disconnects; it creates nothing on the relay.
    func cloud() -> DoctorCheck {
        // Never the URLs as given: they may carry a user and password, or a token.
        let urls = configuration.cloud.urls.map(NATSConnection.withoutCredentials)
        guard !urls.isEmpty else {
            return DoctorCheck(area: "cloud", name: "relay", status: .failure, detail: "no relay is configured",
                               fix: "give --cloud nats://HOST:PORT (or \"cloud\" in the configuration file)")
        }
        var options = configuration.cloud.settings(meshHash: "", name: "doctor").connection
        options.retryOnFailedConnect = false
        options.connectTimeout = .seconds(2)
        let connection: NATSConnection
        do {
            connection = try NATSConnection(options)
        } catch {
            return DoctorCheck(area: "cloud", name: "relay", status: .failure, detail: "\(error)",
                               fix: "start nats-server there (nats-server -a HOST -p PORT -js), or correct --cloud and the cloud_* credentials")
        }
        defer { connection.close() }
        guard configuration.cloud.storeAndForward else {
            return DoctorCheck(area: "cloud", name: "relay", status: .ok, detail: "\(urls.joined(separator: ", ")) answers; store-and-forward is off")
        }
        if connection.offersJetStream {
            return DoctorCheck(area: "cloud", name: "relay", status: .ok, detail: "\(urls.joined(separator: ", ")) answers, with JetStream for store-and-forward")
        }
        return DoctorCheck(area: "cloud", name: "relay", status: .warning, detail: "\(urls.joined(separator: ", ")) answers but has no JetStream: frames for peers that are away will not wait",
                           fix: "start nats-server with -js (and a store directory, -sd DIR), or set cloud_store_and_forward to false")
    }
}
