import ArcusMesh

/// One end of an in-process link made by `Loopback.pair`, behaving as its `conditions` say.
///
/// Messages arrive in order, after their serialisation at `bytesPerSecond` behind the messages
/// sent before them plus `latency`. `send` returns once the message is in flight and suspends
/// while `queueLimitBytes` are in flight in its direction: sent, but not yet taken by the peer's
/// consumer, so a peer that stops reading stops its sender as a full TCP window would. Closing
/// either end, or dropping it, finishes both streams and fails suspended sends with
/// `LinkError.closed`; messages still in flight are lost.
///
/// All methods may be called from any task. `incoming` has one consumer.
public final class LoopbackLink: Link {
    /// The transport the link stands in for; `.loopback` unless the pair was made as another.
    public let kind: LinkKind
    /// The pair's name, for logs.
    public let name: String
    public let conditions: LoopbackConditions
    public let incoming: AsyncStream<[UInt8]>

    private let connection: LoopbackConnection
    private let side: LoopbackSide

    init(connection: LoopbackConnection, side: LoopbackSide, name: String, kind: LinkKind) {
        self.connection = connection
        self.kind = kind
        self.side = side
        self.name = name
        self.conditions = connection.conditions
        self.incoming = AsyncStream(unfolding: { await connection.receive(at: side) })
    }

    public var mtu: Int { conditions.mtu }

    /// The emulated conditions: twice the one-way latency (a round trip of empty messages), the
    /// emulated rate, and the cost of the kind the link stands in for.
    public var metrics: LinkMetrics {
        LinkMetrics(roundTrip: conditions.latency * 2, bytesPerSecond: conditions.bytesPerSecond, cost: kind.defaultCost)
    }

    /// The pair's name and the peer's end (`a` or `b`).
    public var description: String { "loopback \(name)/\(side.peer == .a ? "a" : "b")" }

    /// Sends one message of at most `mtu` bytes; see `Link.send`. The message counts as sent
    /// even if `lossRate` then drops it.
    public func send(_ message: [UInt8]) async throws {
        try await connection.send(message, from: side)
    }

    /// Closes both ends at once, as a clean shutdown would.
    public func close() {
        connection.close()
    }

    /// Fails abruptly, as when a radio goes out of range or a process dies: this end closes at
    /// once, and its peer after `detectionDelay`, the time it takes to notice (a BLE supervision
    /// timeout, a TCP keepalive). Until then the peer hears nothing, and its sends are accepted
    /// until its queue is full, then suspend, then fail. With no delay, the same as `close()`.
    public func drop(peerNoticesAfter detectionDelay: Duration = .zero) {
        connection.drop(side, peerNoticesAfter: detectionDelay)
    }

    /// Messages and bytes this end has sent and received.
    public var statistics: LinkStatistics { connection.statistics(of: side) }

    /// Messages this end sent that `lossRate` dropped.
    public var messagesLost: Int { connection.messagesLost(from: side) }

    /// Bytes this end has sent that the peer's consumer has not taken yet.
    public var bytesInFlight: Int { connection.bytesInFlight(from: side) }

    /// Whether this end is closed: sends fail and `incoming` has finished or is finishing.
    public var isClosed: Bool { connection.isClosed(side) }
}
