/// One life of a peer as a session sees it: what the peer sends during that life, and a way to
/// send to it. When the peer restarts, the conversation is over — `incoming` finishes, `send`
/// throws `LinkError.closed`, and whatever it left unacknowledged is dropped, never delivered to
/// the peer's next life, which knows nothing of it. `PeerSession.conversation(after:)` gives the
/// next one.
///
/// This is what a consumer with state spanning messages needs: a sync session begins with a hello
/// and must not see the hello of a restarted peer in the middle of its stream.
public struct PeerConversation: Sendable {
    public let session: PeerSession
    /// Counts the peer's restarts seen by this session, from 0.
    public let generation: Int
    /// The peer's messages of this life, once each, in order. One consumer.
    public let incoming: AsyncStream<[UInt8]>

    init(session: PeerSession, generation: Int) {
        self.session = session
        self.generation = generation
        incoming = AsyncStream(unfolding: { await session.nextDelivery(of: generation) })
    }

    public var peer: PeerID { session.peer }

    /// Queues one message for this life of the peer (see `PeerSession.send`).
    public func send(_ message: [UInt8]) async throws {
        try await session.send(message, in: generation)
    }

    /// Ends the conversation from this side; the session and its links go on.
    public func end() async {
        await session.endConversation(generation)
    }
}
