import ArcusCRDT
import ArcusStore

extension Agent {
    /// Events an observer's consumer may fall behind by before the stream ends.
    package static let observerBacklog = 1024

    /// A live query's results: the current result at once, then one after every commit that
    /// changes it. Ends when the agent stops; the observer is cancelled when the consumer stops
    /// iterating. The HTTP API's `GET /v1/observe` streams these; the library hands them over.
    ///
    /// A consumer that falls `observerBacklog` events behind gets those events, then the end:
    /// each event's diff is against the one before it, so a stream with a gap would mislead
    /// whoever applies diffs. Observing again starts from the current result.
    package func observe(_ query: String, arguments: [String: Value]) throws -> AsyncStream<ObserverEvent> {
        let (events, continuation) = AsyncStream.makeStream(of: ObserverEvent.self, bufferingPolicy: .bufferingOldest(Self.observerBacklog))
        let observer = try store.registerObserver(query, arguments: arguments) { [logger] event in
            if case .dropped = continuation.yield(event) {
                logger.notice("an observer fell \(Self.observerBacklog) events behind and was ended: \(query)")
                continuation.finish()
            }
        }
        guard let key = observations.add({ continuation.finish() }) else {
            observer.cancel()
            throw AgentStopping()
        }
        continuation.onTermination = { [observations] _ in
            observer.cancel()
            observations.remove(key)
        }
        return events
    }
}

/// The agent is stopping: it takes no new observer.
package struct AgentStopping: Error, CustomStringConvertible {
    package var description: String { "the agent is stopping" }
}
