import CNATS

extension NATSConnection {
    /// Whether the server offers JetStream, found by asking for a stream that need not exist:
    /// "not found" comes only from a server with JetStream. Creates nothing.
    public var offersJetStream: Bool {
        do {
            _ = try streamState("ARCUS_PROBE")
            return true
        } catch {
            return error.status == NATS_NOT_FOUND
        }
    }
}
