import Synchronization

/// The open `GET /v1/observe` streams, so that a graceful shutdown can end them: an event
/// stream never ends on its own, and the HTTP server waits for open responses before it stops.
final class ObservationStreams: Sendable {
    private let state = Mutex<(next: Int, finish: [Int: @Sendable () -> Void], closed: Bool)>((0, [:], false))

    /// Registers a stream's `finish`; returns its key, or nil (and finishes it) after shutdown began.
    func add(_ finish: @escaping @Sendable () -> Void) -> Int? {
        let key = state.withLock { state -> Int? in
            guard !state.closed else { return nil }
            state.next += 1
            state.finish[state.next] = finish
            return state.next
        }
        if key == nil { finish() }
        return key
    }

    func remove(_ key: Int) {
        _ = state.withLock { $0.finish.removeValue(forKey: key) }
    }

    func finishAll() {
        let all = state.withLock { state in
            state.closed = true
            defer { state.finish = [:] }
            return Array(state.finish.values)
        }
        for finish in all { finish() }
    }
}
