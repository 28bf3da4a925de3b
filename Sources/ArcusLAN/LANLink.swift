import ArcusMesh
import NIOCore
import Synchronization

/// A TCP connection to one peer, carrying length-prefixed frames: a `Link` of kind `.lan`.
///
/// `send` suspends while the socket and the channel's write buffer are full; `incoming` reads
/// from the socket only as fast as its consumer takes messages, so what either direction holds is
/// bounded by `LANLinkLimits.bufferLimit`. The link closes when either side closes it, when the
/// peer vanishes (a reset, or keepalive giving up) and when the peer breaks the framing; `failure`
/// then says which. All members may be called from any task.
public final class LANLink: Link {
    public var kind: LinkKind { .lan }
    public let mtu: Int
    /// The endpoint the peer is known by: the address it dialled, or for an accepted link the
    /// peer's address with the port it listens on.
    public let remote: TransportEndpoint
    public let description: String
    public let incoming: AsyncStream<[UInt8]>
    private let ends: LANChannelEnds
    private let unconfirmed = UnconfirmedBytes(limit: LANLinkLimits.writerSlackBytes)

    init(_ ends: LANChannelEnds, remote: TransportEndpoint, mtu: Int, accepted: Bool) {
        self.ends = ends
        self.remote = remote
        self.mtu = mtu
        self.description = "lan link \(accepted ? "from" : "to") \(remote.address)"
        let frames = ends.frames
        self.incoming = AsyncStream(unfolding: { await frames.next() })
    }

    /// Why the link closed, if it did not close in order: a frame too long, one cut short by the
    /// peer vanishing, a reset. Nil while open and after an orderly close.
    public var failure: LANLinkFailure? { ends.failure.value }

    /// Whether the connection has closed, for whatever reason.
    public var isClosed: Bool { !ends.channel.isActive }

    /// Succeeds once the connection has closed.
    var closed: EventLoopFuture<Void> { ends.channel.closeFuture }

    /// The TCP channel, for tests that read its socket options.
    var channel: any Channel { ends.channel }

    public func send(_ message: [UInt8]) async throws {
        guard message.count <= mtu else { throw LinkError.messageTooLarge(size: message.count, mtu: mtu) }
        guard ends.channel.isActive else { throw LinkError.closed }
        do {
            try await ends.writer.write(message)
            // NIO's async writer takes writes while it last knew the channel writable, and learns
            // otherwise only when the event loop has written what it took: on a busy loop it can
            // run far ahead of the watermark. Every `writerSlackBytes`, wait for the loop to catch
            // up, so that what the writer holds stays bounded (LANLinkLimits.bufferLimit).
            if unconfirmed.add(message.count + LANFrameDecoder.headerSize) {
                try await ends.channel.eventLoop.submit {}.get()
            }
        } catch {
            // The writer fails in NIO's own terms once the channel is gone; callers know links.
            if Task.isCancelled { throw CancellationError() }
            throw LinkError.closed
        }
    }

    public func close() {
        ends.channel.close(promise: nil)
    }
}

/// Bytes handed to the writer since the event loop last confirmed it had taken them.
private final class UnconfirmedBytes: Sendable {
    private let bytes = Mutex(0)
    private let limit: Int

    init(limit: Int) { self.limit = limit }

    /// Counts `count` more; true (and the count starts again) once `limit` is reached, when the
    /// caller should wait for the loop.
    func add(_ count: Int) -> Bool {
        bytes.withLock { bytes in
            bytes += count
            guard bytes >= limit else { return false }
            bytes = 0
            return true
        }
    }
}
