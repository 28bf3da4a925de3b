import Foundation

/// Runs `body`, which blocks (waits for a process to end, polls a file), on a thread of its own
/// and returns what it returned. Never on the cooperative pool: it has a thread or two per core,
/// and the agents that tests hold in process need them for their sessions and their API.
public func onThreadOfItsOwn<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// `onThreadOfItsOwn` for a body that cannot fail.
public func onThreadOfItsOwn<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}
