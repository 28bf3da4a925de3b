import ArcusMesh
import ArcusSync

/// Carries a sync session on a mesh `PeerSession`: the multiplexer's one session per peer, over
/// every link to it. Each sync frame is one session message, so it arrives whole, once, in
/// order, whichever link carries it; a link that fails over does not end the sync session —
/// only closing the peer session does.
///
/// The channel owns the peer session: `close()` closes it (its links included), as a sync
/// channel's close must end both directions. One sync session per peer session, since
/// `incoming` has one consumer.
public final class PeerSessionSyncChannel: SyncChannel {
    public let session: PeerSession
    /// Attachment chunks are cut to this, and delta batches sized from it (see
    /// `SyncSession.batchSize`). A session message may be up to `maximumMessageSize` (1 MiB by
    /// default); a sync frame over that makes `send` throw and ends the sync session.
    public let preferredFrameSize: Int

    public init(_ session: PeerSession, preferredFrameSize: Int = 16 << 10) {
        self.session = session
        self.preferredFrameSize = min(preferredFrameSize, session.configuration.maximumMessageSize)
    }

    public func send(_ frame: [UInt8]) async throws {
        try await session.send(frame)
    }

    public var incoming: AsyncStream<[UInt8]> { session.incoming }

    public func close() {
        let session = self.session
        Task { await session.close() }
    }

    public var description: String { "mesh session with \(session.peer)" }
}
