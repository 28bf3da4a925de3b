/// The sizes and times a `LANTransport` gives its connections. The buffers are fixed rather than
/// left to the kernel's autotuning so that what a link holds in flight has a known bound
/// (`bufferLimit`), and a slow reader holds back its sender instead of queueing megabytes.
public struct LANLinkLimits: Sendable, Hashable {
    /// The largest message a link carries, and so the largest frame a peer may announce.
    public var mtu = 64 * 1024
    /// The socket's send and receive buffers, as asked of the kernel (Linux doubles them).
    public var socketBufferBytes = 64 * 1024
    /// Bytes queued in the channel, above the socket, beyond which `send` suspends.
    public var writeBufferBytes = 64 * 1024
    /// Messages received but not yet taken from `incoming` beyond which the link stops reading.
    public var incomingMessages = 8
    /// How long a connection may stay silent before TCP probes it, the time between probes, and
    /// how many unanswered probes drop it: a peer that vanished without closing (power cut, cable
    /// out) is noticed in `keepaliveIdle + keepaliveInterval * keepaliveProbes`.
    public var keepaliveIdle: Duration = .seconds(15)
    public var keepaliveInterval: Duration = .seconds(5)
    public var keepaliveProbes = 3
    /// How long a dial may take to connect. (How long an accepted connection has for its
    /// `LANHello` and handshake is its `PendingHandshakes` deadline.)
    public var connectTimeout: Duration = .seconds(10)

    public init() {}

    /// The most bytes one socket read takes; a link reads once each time it wants more.
    static let readBytes = 64 * 1024
    /// Bytes a link hands NIO's writer before it waits for the event loop to have taken them.
    static let writerSlackBytes = 16 * 1024

    /// The most bytes of messages one direction of a link holds, sent but not yet taken from
    /// `incoming`, before `send` suspends: the channel's write buffer and the message that filled
    /// it, what NIO's writer took ahead of the event loop (`writerSlackBytes` and a message), both
    /// kernels' queues, one read, a partial frame, and the unread messages. Linux
    /// doubles the buffer sizes asked of it and lets a queue overshoot them (its accounting is by
    /// segment, not byte), so each kernel is counted at four times what was asked.
    public var bufferLimit: Int {
        let channel = writeBufferBytes + mtu + Self.writerSlackBytes + mtu
        let kernels = 2 * 4 * socketBufferBytes
        let reading = Self.readBytes + mtu + LANFrameDecoder.headerSize + incomingMessages * mtu
        return channel + kernels + reading
    }
}
