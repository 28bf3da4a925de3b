import ArcusMesh
import Metrics

/// A transport's link as the agent hands it to the handshake: the same link, whose bytes each
/// way are added to `arcus_link_bytes_total` for its transport, whatever the transport is.
///
/// `incoming` pulls from the wrapped link's stream one message at a time, so the wrapped link's
/// flow control is kept: nothing is read ahead of the consumer.
final class CountedLink: Link {
    private let link: any Link
    private let sent: Counter
    let incoming: AsyncStream<[UInt8]>

    init(_ link: any Link, sent: Counter, received: Counter) {
        self.link = link
        self.sent = sent
        let source = IncomingMessages(link.incoming)
        incoming = AsyncStream(unfolding: {
            guard let message = await source.next() else { return nil }
            received.increment(by: message.count)
            return message
        })
    }

    var kind: LinkKind { link.kind }
    var mtu: Int { link.mtu }
    var description: String { link.description }
    var metrics: LinkMetrics { link.metrics }

    func send(_ message: [UInt8]) async throws {
        try await link.send(message)
        sent.increment(by: message.count)
    }

    func close() { link.close() }
}

/// The wrapped link's iterator. `Link.incoming` has one consumer, and `AsyncStream(unfolding:)`
/// calls its closure for one element at a time, so the iterator is never used concurrently.
private final class IncomingMessages: @unchecked Sendable {
    private var iterator: AsyncStream<[UInt8]>.Iterator

    init(_ stream: AsyncStream<[UInt8]>) { iterator = stream.makeAsyncIterator() }

    func next() async -> [UInt8]? { await iterator.next() }
}
