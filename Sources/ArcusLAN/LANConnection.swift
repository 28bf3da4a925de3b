#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArcusMesh
import NIOCore
import Synchronization

/// A TCP channel set up to carry a `LANLink`: socket options, framing, the record of why it
/// failed, and the async bridge that gives `send` and `incoming` their backpressure.
struct LANConnection: Sendable {
    let channel: NIOAsyncChannel<[UInt8], [UInt8]>
    let failure: LANFailureRecord
    /// An accepted connection's slot until its handshake ends; nil for a dialled one.
    var pending: PendingHandshake?

    /// Sets up `channel`; called from a bootstrap's channel initializer, on its event loop.
    static func configure(_ channel: any Channel, limits: LANLinkLimits, pending: PendingHandshake? = nil) throws -> LANConnection {
        let options = channel.syncOptions!
        try options.setOption(.tcpOption(.tcp_nodelay), value: 1)
        try options.setOption(.socketOption(.so_keepalive), value: 1)
        try options.setOption(.tcpOption(.init(rawValue: TCP_KEEPIDLE)), value: limits.keepaliveIdle.wholeSeconds)
        try options.setOption(.tcpOption(.init(rawValue: TCP_KEEPINTVL)), value: limits.keepaliveInterval.wholeSeconds)
        try options.setOption(.tcpOption(.init(rawValue: TCP_KEEPCNT)), value: limits.keepaliveProbes)
        try options.setOption(.socketOption(.so_sndbuf), value: limits.socketBufferBytes)
        try options.setOption(.socketOption(.so_rcvbuf), value: limits.socketBufferBytes)
        try options.setOption(.writeBufferWaterMark, value: .init(low: limits.writeBufferBytes / 2, high: limits.writeBufferBytes))
        // One read per wake-up, of at most `readBytes`: what arrives past the incoming limit in
        // one go is then bounded by a read, not by NIO's default of several.
        try options.setOption(.maxMessagesPerRead, value: 1)
        try options.setOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: LANLinkLimits.readBytes))

        let failure = LANFailureRecord()
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(ByteToMessageHandler(LANFrameDecoder(maximumLength: limits.mtu)))
        try pipeline.addHandler(MessageToByteHandler(LANFrameEncoder()))
        try pipeline.addHandler(LANFailureHandler(record: failure))
        let bridge = try NIOAsyncChannel<[UInt8], [UInt8]>(
            wrappingChannelSynchronously: channel,
            configuration: .init(
                backPressureStrategy: .init(lowWatermark: max(1, limits.incomingMessages / 4), highWatermark: limits.incomingMessages),
                inboundType: [UInt8].self,
                outboundType: [UInt8].self
            )
        )
        return LANConnection(channel: bridge, failure: failure, pending: pending)
    }
}

/// The first failure of a connection, kept for the link that outlives its channel.
final class LANFailureRecord: Sendable {
    private let first = Mutex<LANLinkFailure?>(nil)

    var value: LANLinkFailure? { first.withLock { $0 } }

    func record(_ failure: LANLinkFailure) {
        first.withLock { if $0 == nil { $0 = failure } }
    }
}

/// Records why the connection failed (a frame too long, a frame cut short, a reset) and closes
/// it: NIO reports errors without closing, and a link that hit one must not go on.
final class LANFailureHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = [UInt8]
    typealias InboundOut = [UInt8]

    let record: LANFailureRecord

    init(record: LANFailureRecord) {
        self.record = record
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        record.record(error as? LANLinkFailure ?? .connection(String(describing: error)))
        context.close(promise: nil)
    }
}

extension Duration {
    fileprivate var wholeSeconds: Int { Int(max(1, components.seconds)) }
}
