import ArcusMesh
import ArcusSync

/// Carries a sync session on one conversation of a mesh `PeerSession`: the multiplexer's one
/// session per peer, over every link to it. Each sync frame is one session message, so it arrives
/// whole, once, in order, whichever link carries it; a link that fails over does not end the sync
/// session. The peer restarting does: its new life gets a new conversation and a new sync session
/// (see `Agent.runSync(with:)`), which starts from the hellos again.
///
/// `close()` ends the conversation, not the peer session, whose links other conversations and
/// presence go on using.
public final class PeerSessionSyncChannel: SyncChannel {
    public let conversation: PeerConversation
    /// Attachment chunks are cut to this, and delta batches sized from it (see
    /// `SyncSession.batchSize`). A session message may be up to `maximumMessageSize` (1 MiB by
    /// default); a sync frame over that makes `send` throw and ends the sync session.
    public let preferredFrameSize: Int

    public init(_ conversation: PeerConversation, preferredFrameSize: Int = 16 << 10) {
        self.conversation = conversation
        self.preferredFrameSize = min(preferredFrameSize, conversation.session.configuration.maximumMessageSize)
    }

    public func send(_ frame: [UInt8]) async throws {
        try await conversation.send(frame)
    }

    public var incoming: AsyncStream<[UInt8]> { conversation.incoming }

    public func flush(until deadline: ContinuousClock.Instant) async -> Bool {
        await conversation.session.flush(until: deadline)
    }

    public func close() {
        let conversation = self.conversation
        Task { await conversation.end() }
    }

    public var description: String { "mesh session with \(conversation.peer), conversation \(conversation.generation)" }
}
