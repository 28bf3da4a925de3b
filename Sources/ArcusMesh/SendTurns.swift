import Synchronization

/// An asynchronous lock that hands itself to its waiters in the order they came, so that each
/// sender puts all the fragments of its message on the link before the next begins.
final class SendTurns: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var isTaken = false
        var waiters: [Waiter] = []
        var nextWaiterID: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Waits for this caller's turn. Throws `CancellationError` if the task is cancelled before
    /// the turn comes; otherwise the caller must `end()` its turn.
    func begin() async throws {
        let id: UInt64? = state.withLock { state in
            guard state.isTaken else {
                state.isTaken = true
                return nil
            }
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        guard let id else { return }

        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let granted: Bool? = state.withLock { state in
                    // The turn may have ended since the first look.
                    if !state.isTaken {
                        state.isTaken = true
                        return true
                    }
                    // Checked under the lock: the cancellation handler, which takes the same lock,
                    // runs after the flag is set, so it either sees this waiter or this sees the flag.
                    if Task.isCancelled { return false }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                switch granted {
                case true?: continuation.resume()
                case false?: continuation.resume(throwing: CancellationError())
                case nil: break
                }
            }
        } onCancel: {
            let waiter: Waiter? = state.withLock { state in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Ends the current turn, handing it straight to the longest waiter, if any.
    func end() {
        let next: Waiter? = state.withLock { state in
            precondition(state.isTaken, "a turn ended that had not begun")
            guard !state.waiters.isEmpty else {
                state.isTaken = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.continuation.resume()
    }
}
