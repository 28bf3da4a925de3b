import ArcusCodec
import ArcusMesh
import ArcusSync
import Synchronization

/// Carries a sync session on a `Link`: each sync frame is one message of a `MessageChannel`,
/// cut into fragments that fit the link's MTU. The composition point between the protocol,
/// which knows no transport, and the links, which know no sync message.
public final class LinkSyncChannel: SyncChannel {
    public let messages: MessageChannel
    private let counts = Mutex((frames: 0, bytes: 0))

    /// The largest frame the codec decodes: more would be refused after it was buffered.
    public static let largestFrame = CodecLimits.standard.maximumFrameLength + FrameHeader.maximumOverhead

    /// Wraps `link`; frames up to `maximumFrameSize` bytes go through (by default the codec's
    /// own limit, 8 MiB; a delta batch is cut well below it).
    public init(_ link: any Link, maximumFrameSize: Int = LinkSyncChannel.largestFrame) {
        messages = MessageChannel(link, maximumMessageSize: maximumFrameSize)
    }

    public func send(_ frame: [UInt8]) async throws {
        try await messages.send(frame)
        counts.withLock { $0.frames += 1; $0.bytes += frame.count }
    }

    /// Sync frames this side has sent, and their bytes (before fragmentation).
    public var framesSent: (frames: Int, bytes: Int) { counts.withLock { $0 } }

    public var incoming: AsyncStream<[UInt8]> { messages.incoming }

    /// A frame of this size or less is one fragment: one radio packet on BLE.
    public var preferredFrameSize: Int { messages.fragmentPayload }

    public func close() { messages.close() }

    public var description: String { messages.description }
}
