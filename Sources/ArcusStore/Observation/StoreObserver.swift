import ArcusCRDT
import Dispatch
import Synchronization

/// What an observer receives: the query's whole current result, and how it differs from the
/// result it received last (empty for the first event).
public struct ObserverEvent: Sendable {
    public var items: [Value]
    public var diff: ResultDiff
}

/// A registered observer. It stays registered until `cancel()` or until it is deallocated.
public final class StoreObserver: Sendable {
    private let unregister: @Sendable () -> Void
    private let isRegistered: @Sendable () -> Bool

    init(unregister: @escaping @Sendable () -> Void, isRegistered: @escaping @Sendable () -> Bool) {
        self.unregister = unregister
        self.isRegistered = isRegistered
    }

    public func cancel() { unregister() }

    public var isCancelled: Bool { !isRegistered() }

    deinit { unregister() }
}

/// The store's observers. After each commit it updates every live query over a changed
/// collection and hands events to each observer's own serial queue, in commit order.
final class ObserverRegistry: Sendable {
    private struct Registration {
        var query: LiveQuery
        let deliver: @Sendable (ObserverEvent) -> Void
        let queue: DispatchQueue
    }

    private let state = Mutex<(next: UInt64, registrations: [UInt64: Registration])>((1, [:]))

    func register(_ query: LiveQuery, deliver: @escaping @Sendable (ObserverEvent) -> Void) throws -> StoreObserver {
        let first = ObserverEvent(items: try query.items(), diff: ResultDiff())
        let queue = DispatchQueue(label: "arcus.observer")
        let id = state.withLock { state -> UInt64 in
            let id = state.next
            state.next += 1
            state.registrations[id] = Registration(query: query, deliver: deliver, queue: queue)
            return id
        }
        queue.async { deliver(first) }
        return StoreObserver(unregister: { [weak self] in self?.remove(id) }, isRegistered: { [weak self] in self?.contains(id) ?? false })
    }

    func remove(_ id: UInt64) { _ = state.withLock { $0.registrations.removeValue(forKey: id) } }

    var isEmpty: Bool { state.withLock { $0.registrations.isEmpty } }

    func contains(_ id: UInt64) -> Bool { state.withLock { $0.registrations[id] != nil } }

    /// Called once per commit, in commit order (on the writer, after the commit).
    func committed(_ changes: [DocumentChange]) {
        let collections = Set(changes.map(\.key.collection))
        state.withLock { state in
            for id in state.registrations.keys where collections.contains(state.registrations[id]!.query.collection) {
                do {
                    guard let diff = try state.registrations[id]!.query.apply(changes) else { continue }
                    let registration = state.registrations[id]!
                    let event = ObserverEvent(items: try registration.query.items(), diff: diff)
                    registration.queue.async { registration.deliver(event) }
                } catch {
                    // A document that no longer evaluates (a projection over a changed shape) only
                    // costs this event; the next commit tries again.
                    continue
                }
            }
        }
    }
}
