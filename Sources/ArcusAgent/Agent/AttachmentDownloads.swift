import ArcusSync
import Synchronization

/// The attachment fetches the HTTP API started (`GET /v1/attachments/{hash}` for a blob the
/// store lacks): one task per blob however often it is asked for, outliving the request that
/// started it, cancelled when the agent stops. A fetch that failed is remembered until it is
/// reported once, then forgotten, so that the next request tries again.
final class AttachmentDownloads: Sendable {
    enum Outcome: Sendable {
        /// A fetch is under way (just started, or started earlier).
        case running
        /// The previous fetch failed with this message; it is now forgotten.
        case failed(String)
    }

    private enum Entry {
        case running(Task<Void, Never>)
        case failed(String)
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var stopped = false
    }

    private let state = Mutex(State())

    /// Starts fetching the blob `hashHex` (whose bytes are `hash`; `length` from its token when
    /// known) unless a fetch of it is under way; a failure not yet reported is reported (and
    /// forgotten) instead.
    func start(_ hashHex: String, hash: [UInt8], length: Int64?, engine: SyncEngine) -> Outcome {
        state.withLock { state -> Outcome in
            switch state.entries[hashHex] {
            case .running?:
                return .running
            case .failed(let message)?:
                state.entries[hashHex] = nil
                return .failed(message)
            case nil:
                guard !state.stopped else { return .failed("the agent is stopping") }
                // The task's own bookkeeping waits for this lock, so the entry is in place first.
                let task = Task {
                    let failure: String?
                    do {
                        try await engine.fetchAttachment(hash: hash, length: length)
                        failure = nil
                    } catch is CancellationError {
                        failure = nil
                    } catch {
                        failure = "\(error)"
                    }
                    self.finished(hashHex, failure: Task.isCancelled ? nil : failure)
                }
                state.entries[hashHex] = .running(task)
                return .running
            }
        }
    }

    private func finished(_ hashHex: String, failure: String?) {
        state.withLock { state in
            state.entries[hashHex] = failure.map { Entry.failed($0) }
        }
    }

    /// Cancels every fetch (the bytes that arrived stay in the store for the next run) and
    /// refuses new ones.
    func cancelAll() {
        let tasks = state.withLock { state -> [Task<Void, Never>] in
            state.stopped = true
            let tasks = state.entries.values.compactMap { entry -> Task<Void, Never>? in
                if case .running(let task) = entry { return task }
                return nil
            }
            state.entries.removeAll()
            return tasks
        }
        for task in tasks { task.cancel() }
    }
}
