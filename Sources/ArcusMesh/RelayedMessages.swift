extension AsyncStream where Element == [UInt8] {
    /// The messages of `source`, each passed through `relay` (nil drops it), taken from `source`
    /// only as they are asked for, so that a link wrapped this way keeps its backpressure. For
    /// links that wrap links: ones that watch, or, in tests, ones that lose what they carry.
    public static func relaying(
        _ source: AsyncStream<[UInt8]>, _ relay: @escaping @Sendable ([UInt8]) -> [UInt8]?
    ) -> AsyncStream<[UInt8]> {
        let relayed = RelayedMessages(source, relay: relay)
        return AsyncStream(unfolding: { await relayed.next() })
    }
}

/// Holds the source's iterator between calls: an actor, because the iterator must be kept and
/// advanced by one caller at a time.
private actor RelayedMessages {
    private var messages: AsyncStream<[UInt8]>.Iterator
    private let relay: @Sendable ([UInt8]) -> [UInt8]?

    init(_ source: AsyncStream<[UInt8]>, relay: @escaping @Sendable ([UInt8]) -> [UInt8]?) {
        self.messages = source.makeAsyncIterator()
        self.relay = relay
    }

    func next() async -> [UInt8]? {
        // An actor cannot await a mutating method of its own property; the iterator is a handle
        // on the stream's shared state, so a copy that is put back afterwards is the same iterator.
        var messages = self.messages
        defer { self.messages = messages }
        while let message = await messages.next(isolation: self) {
            if let relayed = relay(message) { return relayed }
        }
        return nil
    }
}
