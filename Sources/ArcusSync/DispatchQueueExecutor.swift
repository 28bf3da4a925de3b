import Dispatch

/// Runs the jobs of the actors given it, one at a time, on a serial dispatch queue instead of Swift's
/// cooperative pool.
///
/// A sync session calls the store synchronously, and a commit waits for SQLite's writer and,
/// under `durability = full`, for fsync: tens of milliseconds on a busy disk. The cooperative
/// pool has one thread per core, so a few sessions waiting like that take every thread, and
/// nothing else in the process runs — a new link's hello, heartbeats, the HTTP API — until
/// their commits are through. (On 2 cores, an agent restarted into a 16-host mesh caught up
/// with 15 peers at once and failed every dial for half a minute: no hello within 5 s.) A
/// dispatch queue whose thread blocks gets another thread from dispatch instead.
final class DispatchQueueExecutor: SerialExecutor {
    let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
