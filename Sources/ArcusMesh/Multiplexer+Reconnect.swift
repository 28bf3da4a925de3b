extension Multiplexer {
    /// Opens a link to `peer` with `dialer`, secures it with `secure` (the handshake; plain links
    /// only in tests), and adds it as this side's dial: the answer to `.needsLink(peer)`. Throws
    /// the `LinkDialError` if no transport opens a link, or the error `secure` or `add` throws.
    @discardableResult
    public nonisolated func reconnect(
        _ peer: PeerID,
        using dialer: LinkDialer,
        secure: @Sendable (any Link) async throws -> any Link = { $0 }
    ) async throws -> PeerSession {
        let link = try await dialer.open(to: peer)
        let secured: any Link
        do {
            secured = try await secure(link)
        } catch {
            link.close()
            throw error
        }
        return try await add(secured, as: .dialer)
    }
}
