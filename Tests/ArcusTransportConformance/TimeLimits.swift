/// A step of a test that took longer than it may: the test fails instead of hanging.
public struct StepTimedOut: Error, CustomStringConvertible {
    public let step: String
    public let limit: Duration

    public var description: String { "\(step) did not finish within \(limit)" }
}

/// Runs `body`, or throws `StepTimedOut` once `limit` has passed and cancels it. What `body`
/// awaits must respond to cancellation, as links and channels do.
public func within<T: Sendable>(
    _ limit: Duration, _ step: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw StepTimedOut(step: step, limit: limit)
        }
        defer { group.cancelAll() }
        return try await group.next()!
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
