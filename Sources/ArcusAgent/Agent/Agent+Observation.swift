import ArcusCRDT
import ArcusStore

extension Agent {
    /// A live query's results: the current result at once, then one after every commit that
    /// changes it. Ends when the agent stops; the observer is cancelled when the consumer stops
    /// iterating. The HTTP API's `GET /v1/observe` streams these; the library hands them over.
    package func observe(_ query: String, arguments: [String: Value]) throws -> AsyncStream<ObserverEvent> {
        let (events, continuation) = AsyncStream.makeStream(of: ObserverEvent.self, bufferingPolicy: .bufferingNewest(1024))
        let observer = try store.registerObserver(query, arguments: arguments) { event in continuation.yield(event) }
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
