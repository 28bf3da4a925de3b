/// Carries messages of any size up to `maximumMessageSize` over a `Link`, cutting each into
/// fragments that fit the link's MTU and joining them again on the other side. Both ends of the
/// link must be wrapped in a channel. The format costs one byte per fragment (see `FragmentHeader`).
///
/// A channel is itself a link, whose MTU is `maximumMessageSize`: it keeps the link's order,
/// backpressure and closing. Concurrent senders take turns, in the order they called, so the
/// fragments of two messages never interleave.
///
/// The channel never trusts the peer: a message longer than `maximumMessageSize` is refused from
/// its first fragment, before any of it is buffered, and any fragment that breaks the format
/// closes the link and finishes `incoming`; `peerViolation` then says why. A channel buffers at
/// most one partial message.
public final class MessageChannel: Link {
    /// The link the fragments travel on. Sending on it directly would corrupt the channel.
    public let link: any Link
    /// The largest message the channel sends or accepts, in bytes.
    public let maximumMessageSize: Int
    /// The messages the peer sent, whole and in order; finishes when the link closes or when the
    /// peer breaks the fragment format.
    public let incoming: AsyncStream<[UInt8]>

    private let turns = SendTurns()
    private let reader: IncomingMessages

    /// Wraps `link`, whose MTU must hold a fragment header, the length of the largest message
    /// and one byte (6 bytes for the default 16 MiB). The channel becomes the only user of the
    /// link's `send` and `incoming`.
    public init(_ link: any Link, maximumMessageSize: Int = 16 << 20) {
        precondition(maximumMessageSize >= 0, "a maximum message size is never negative")
        let minimumMTU = MessageFragments.minimumMTU(forMessagesUpTo: maximumMessageSize)
        precondition(link.mtu >= minimumMTU, "\(link.description) has an MTU of \(link.mtu) bytes; fragments need \(minimumMTU)")
        self.link = link
        self.maximumMessageSize = maximumMessageSize
        let reader = IncomingMessages(link: link, maximumMessageSize: maximumMessageSize)
        self.reader = reader
        self.incoming = AsyncStream(unfolding: { await reader.next() })
    }

    public var kind: LinkKind { link.kind }
    public var metrics: LinkMetrics { link.metrics }

    /// The channel's MTU: `maximumMessageSize`.
    public var mtu: Int { maximumMessageSize }

    public var description: String { "\(link.description), in fragments" }

    /// The largest message that travels in a single fragment: the link's MTU less the header.
    public var fragmentPayload: Int { link.mtu - FragmentHeader.size }

    /// Why the channel closed the link, if the peer's fragments broke the format.
    public var peerViolation: FragmentationError? { reader.violation.withLock { $0 } }

    /// Sends one message of at most `maximumMessageSize` bytes, suspending while the link is
    /// saturated or another sender's message is going out.
    ///
    /// Throws `LinkError.messageTooLarge` (with `maximumMessageSize` as the MTU) before sending
    /// anything, `LinkError.closed` once the link is closed, and `CancellationError` if the task
    /// is cancelled while it waits. A send that fails after part of its message went out closes
    /// the link, since the peer would otherwise join what follows to half a message.
    public func send(_ message: [UInt8]) async throws {
        guard message.count <= maximumMessageSize else {
            throw LinkError.messageTooLarge(size: message.count, mtu: maximumMessageSize)
        }
        try await turns.begin()
        defer { turns.end() }
        var fragmentsSent = 0
        do {
            for fragment in MessageFragments(message, mtu: link.mtu) {
                try await link.send(fragment)
                fragmentsSent += 1
            }
        } catch {
            if fragmentsSent > 0 { link.close() }
            throw error
        }
    }

    /// Closes the link, both directions. Idempotent.
    public func close() {
        link.close()
    }
}
