import Synchronization

/// A step of a test that took longer than it may: the test fails instead of hanging.
public struct StepTimedOut: Error, CustomStringConvertible {
    public let step: String
    public let limit: Duration

    public var description: String { "\(step) did not finish within \(limit)" }
}

/// Runs `body`, or throws `StepTimedOut` once `limit` has passed and cancels it. What `body`
/// awaits should respond to cancellation, as links and channels do; one that does not is left
/// running rather than waited for, so the step fails on time whatever it awaits. (A task group
/// would wait for it: a step stuck on something that ignores cancellation held a test until the
/// suite's own limit, with nothing said of which step.)
public func within<T: Sendable>(
    _ limit: Duration, _ step: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let work = Task { try await body() }
    let outcome = FirstOutcome<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            outcome.await(continuation)
            let timer = Task {
                guard (try? await Task.sleep(for: limit)) != nil else { return }
                if outcome.settle(.failure(StepTimedOut(step: step, limit: limit))) { work.cancel() }
            }
            Task {
                let result = await work.result
                timer.cancel()
                outcome.settle(result)
            }
        }
    } onCancel: {
        work.cancel()
    }
}

/// The first of a step's outcomes (its result, or its time running out), handed to whoever
/// waits for it; the later one is dropped.
private final class FirstOutcome<T: Sendable>: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<T, any Error>?, settled: Result<T, any Error>?)>((nil, nil))

    func await(_ continuation: CheckedContinuation<T, any Error>) {
        let settled: Result<T, any Error>? = state.withLock { state in
            if state.settled == nil { state.continuation = continuation }
            return state.settled
        }
        if let settled { continuation.resume(with: settled) }
    }

    /// Settles the step with `result` unless it is settled already; says whether it was this call.
    @discardableResult
    func settle(_ result: Result<T, any Error>) -> Bool {
        let (first, waiting): (Bool, CheckedContinuation<T, any Error>?) = state.withLock { state in
            guard state.settled == nil else { return (false, nil) }
            state.settled = result
            defer { state.continuation = nil }
            return (true, state.continuation)
        }
        waiting?.resume(with: result)
        return first
    }
}

/// The incoming stream finished before it delivered the messages a test waited for.
public struct StreamFinishedEarly: Error, CustomStringConvertible {
    public let expected: Int
    public let received: Int

    public var description: String { "the stream finished after \(received) of \(expected) messages" }
}

extension AsyncStream where Element == [UInt8] {
    /// The next `count` messages; throws if the stream finishes first or they take over `limit`.
    public func next(_ count: Int, within limit: Duration = .seconds(45)) async throws -> [[UInt8]] {
        try await within(limit, "receiving \(count) messages") {
            var messages: [[UInt8]] = []
            var iterator = self.makeAsyncIterator()
            while messages.count < count, let message = await iterator.next() {
                messages.append(message)
            }
            guard messages.count == count else { throw StreamFinishedEarly(expected: count, received: messages.count) }
            return messages
        }
    }

    /// Every message until the stream finishes; throws if it has not finished within `limit`.
    public func remaining(within limit: Duration = .seconds(45)) async throws -> [[UInt8]] {
        try await within(limit, "waiting for the stream to finish") {
            var messages: [[UInt8]] = []
            for await message in self { messages.append(message) }
            return messages
        }
    }
}
