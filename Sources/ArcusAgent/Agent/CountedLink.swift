import ArcusMesh
import Metrics

/// A link whose bytes each way are counted as they pass: the agent adds them to
/// `arcus_link_bytes_total` for the link's transport, the demo mesh to each peer's figures.
///
/// `incoming` pulls from the wrapped link's stream one message at a time, so the wrapped link's
/// flow control is kept: nothing is read ahead of the consumer.
package final class CountedLink: Link {
    private let link: any Link
    private let sent: @Sendable (Int) -> Void
    package let incoming: AsyncStream<[UInt8]>

    /// Counts each message's bytes with `sent` once the link has taken it, and with `received`
    /// as the consumer takes it.
    package init(_ link: any Link, sent: @escaping @Sendable (Int) -> Void, received: @escaping @Sendable (Int) -> Void) {
        self.link = link
        self.sent = sent
        let source = IncomingMessages(link.incoming)
        incoming = AsyncStream(unfolding: {
            guard let message = await source.next() else { return nil }
            received(message.count)
            return message
        })
    }

    convenience init(_ link: any Link, sent: Counter, received: Counter) {
        self.init(link, sent: { sent.increment(by: $0) }, received: { received.increment(by: $0) })
    }

    package var kind: LinkKind { link.kind }
    package var mtu: Int { link.mtu }
    package var description: String { link.description }
    package var metrics: LinkMetrics { link.metrics }

    package func send(_ message: [UInt8]) async throws {
        try await link.send(message)
        sent(message.count)
    }

    package func close() { link.close() }
}

/// The wrapped link's iterator. `Link.incoming` has one consumer, and `AsyncStream(unfolding:)`
/// calls its closure for one element at a time, so the iterator is never used concurrently.
private final class IncomingMessages: @unchecked Sendable {
    private var iterator: AsyncStream<[UInt8]>.Iterator

    init(_ stream: AsyncStream<[UInt8]>) { iterator = stream.makeAsyncIterator() }

    func next() async -> [UInt8]? { await iterator.next() }
}
