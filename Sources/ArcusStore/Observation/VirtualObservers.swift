import ArcusCRDT
import Dispatch
import Synchronization

/// Observers of `system:` collections. Their rows are made when read, not change-tracked, so an
/// observer runs its SELECT again whenever they may have changed: shortly after a commit, when
/// the program that registered a collection says its rows changed
/// (`Store.virtualCollectionsChanged()`), and once a second for what moves with time alone
/// (uptime, a peer's last contact). It fires only when the result differs from the one it
/// delivered last, so an observer of a quiet collection costs a read a second and no events.
final class VirtualObservers: Sendable {
    /// How long a change waits for others to be read with it: a burst of commits is one read.
    static let coalescing: DispatchTimeInterval = .milliseconds(50)
    /// How often rows that move with time alone are read again.
    static let polling: DispatchTimeInterval = .seconds(1)

    private struct Registration {
        let select: DQLSelect
        let read: @Sendable (DQLSelect) throws -> [Value]?
        var delivered: [Value]
        let deliver: @Sendable (ObserverEvent) -> Void
        let queue: DispatchQueue
    }

    private struct State {
        var next: UInt64 = 1
        var registrations: [UInt64: Registration] = [:]
        var refreshScheduled = false
        var polling = false
    }

    private let state = Mutex(State())
    private let refreshQueue = DispatchQueue(label: "arcus.virtual-observers")

    /// Registers an observer of `select`, whose result `read` makes (holding the store weakly:
    /// nil when it is gone).
    func register(
        _ select: DQLSelect, read: @escaping @Sendable (DQLSelect) throws -> [Value]?, deliver: @escaping @Sendable (ObserverEvent) -> Void
    ) throws -> StoreObserver {
        let first = try read(select) ?? []
        let queue = DispatchQueue(label: "arcus.observer")
        let (id, startPolling) = state.withLock { state -> (UInt64, Bool) in
            let id = state.next
            state.next += 1
            state.registrations[id] = Registration(select: select, read: read, delivered: first, deliver: deliver, queue: queue)
            defer { state.polling = true }
            return (id, !state.polling)
        }
        queue.async { deliver(ObserverEvent(items: first, diff: ResultDiff())) }
        if startPolling { schedulePoll() }
        return StoreObserver(unregister: { [weak self] in self?.remove(id) }, isRegistered: { [weak self] in self?.contains(id) ?? false })
    }

    var isEmpty: Bool { state.withLock { $0.registrations.isEmpty } }

    private func remove(_ id: UInt64) { _ = state.withLock { $0.registrations.removeValue(forKey: id) } }

    private func contains(_ id: UInt64) -> Bool { state.withLock { $0.registrations[id] != nil } }

    /// Something the rows are made from may have changed: read every observer's SELECT again
    /// soon (once for any number of calls in the meantime).
    func changed() {
        let schedule = state.withLock { state -> Bool in
            guard !state.registrations.isEmpty, !state.refreshScheduled else { return false }
            state.refreshScheduled = true
            return true
        }
        guard schedule else { return }
        refreshQueue.asyncAfter(deadline: .now() + Self.coalescing) { [weak self] in self?.refresh() }
    }

    private func schedulePoll() {
        refreshQueue.asyncAfter(deadline: .now() + Self.polling) { [weak self] in
            guard let self else { return }
            let goOn = self.state.withLock { state -> Bool in
                state.polling = !state.registrations.isEmpty
                return state.polling
            }
            guard goOn else { return }
            self.refresh()
            self.schedulePoll()
        }
    }

    /// Reads each observer's SELECT and delivers the result to those whose result changed.
    private func refresh() {
        let selects = state.withLock { state -> [(id: UInt64, select: DQLSelect, read: @Sendable (DQLSelect) throws -> [Value]?)] in
            state.refreshScheduled = false
            return state.registrations.map { ($0.key, $0.value.select, $0.value.read) }
        }
        // One read per distinct SELECT, outside the lock: reading runs the agent's row makers.
        var results: [DQLSelect: [Value]] = [:]
        for (_, select, read) in selects where results[select] == nil {
            // A read that fails (the store closing) skips this round; the next one tries again.
            guard let items = try? read(select) else { continue }
            results[select] = items
        }
        state.withLock { state in
            for (id, select, _) in selects {
                guard let items = results[select], var registration = state.registrations[id], registration.delivered != items else { continue }
                let event = ObserverEvent(items: items, diff: ResultDiff(from: registration.delivered, to: items))
                registration.delivered = items
                state.registrations[id] = registration
                let deliver = registration.deliver
                registration.queue.async { deliver(event) }
            }
        }
    }
}

extension ResultDiff {
    /// The diff between two results of a SELECT whose rows are matched by `_id` when every row
    /// has a distinct one, by position otherwise (rows of groups have no identity of their own).
    init(from before: [Value], to after: [Value]) {
        func keyed(_ rows: [Value]) -> [(String, Value)]? {
            var seen = Set<String>()
            var keyed: [(String, Value)] = []
            for row in rows {
                guard let id = row[path: ["_id"]]?.jsonString, seen.insert(id).inserted else { return nil }
                keyed.append((id, row))
            }
            return keyed
        }
        if let old = keyed(before), let new = keyed(after) {
            self.init(before: old, after: new, touched: Set(new.map(\.0)))
        } else {
            func positional(_ rows: [Value]) -> [(String, Value)] { rows.enumerated().map { (String($0), $1) } }
            self.init(before: positional(before), after: positional(after), touched: [])
        }
    }
}
