import Synchronization

/// The links a transport accepted whose transport hello and mesh handshake have not finished:
/// half-open links, which a stranger can open by the thousand at no cost of their own. Each one
/// needs a slot here, taken at the accept before anything else is spent on it (no task, no
/// buffer, no thread); over `Limits.total`, or over `Limits.perSource` from one source (a LAN
/// address, a Bluetooth device, a cloud peer id), the transport closes the new link at once.
///
/// A slot lasts until its owner settles it (the handshake ended, either way) or until its
/// deadline: one deadline, for the hello and the handshake together, after which the slot is
/// free whatever its owner does — an owner that forgets to settle cannot leak slots. The owner
/// must close a link still unsettled at the deadline (`PendingHandshake.remaining` is the time
/// it has left; transports and the agent give their timeouts from it).
///
/// Every slot is counted once, as `Outcome` when settled or `.timedOut` when its deadline
/// passed first; refusals are counted too (`observe`), so that a flood shows in the metrics.
/// All members may be called from any thread.
public final class PendingHandshakes: Sendable {
    /// How many links may be pending at once, and for how long.
    ///
    /// The defaults suit a Raspberry Pi class device: a pending LAN link costs a socket, a task
    /// and a few KiB of buffers, so 64 of them are a few hundred KiB; a real peer dials once per
    /// link and finishes in milliseconds on a LAN, so 8 per source leave room for several agents
    /// behind one address (and for both ends dialling at once) while one address cannot take
    /// every slot. The deadlines are what a slow but honest peer needs on each transport: a LAN
    /// handshake takes milliseconds, so 5 s is generous; a Bluetooth LE handshake cuts
    /// certificates into packets sent a few per connection interval (30–50 ms) and legitimately
    /// takes seconds on a busy radio, so 15 s; the cloud relay adds internet round trips and a
    /// stream, so 10 s.
    public struct Limits: Sendable, Hashable {
        public var total = 64
        public var perSource = 8
        public var lanDeadline: Duration = .seconds(5)
        public var bluetoothDeadline: Duration = .seconds(15)
        public var cloudDeadline: Duration = .seconds(10)
        /// Links of the in-process loopback transport: no stranger can open them.
        public var loopbackDeadline: Duration = .seconds(10)

        public init() {}

        /// The same deadline on every transport.
        public mutating func setDeadline(_ deadline: Duration) {
            (lanDeadline, bluetoothDeadline, cloudDeadline, loopbackDeadline) = (deadline, deadline, deadline, deadline)
        }

        public func deadline(for kind: LinkKind) -> Duration {
            switch kind {
            case .lan: return lanDeadline
            case .bluetooth: return bluetoothDeadline
            case .cloud: return cloudDeadline
            case .loopback: return loopbackDeadline
            }
        }
    }

    /// How a pending handshake ended.
    public enum Outcome: String, Sendable, Hashable, CaseIterable {
        /// Both hellos and the handshake went through: the link is the mesh's now.
        case completed
        /// The peer broke the protocol, failed to authenticate, or closed the link.
        case failed
        /// The deadline passed first.
        case timedOut = "timed_out"
    }

    /// Why a link was refused a slot.
    public enum Refusal: String, Error, Sendable, Hashable, CaseIterable {
        /// `Limits.total` links are pending.
        case full
        /// `Limits.perSource` links from the same source are pending.
        case sourceFull = "source_full"
    }

    /// What the gate saw, for metrics and logs. Called on the thread that caused it, outside the
    /// gate's lock; it must not block.
    public enum Event: Sendable, Hashable {
        case refused(LinkKind, source: String, Refusal)
        case settled(LinkKind, source: String, Outcome)
    }

    public let limits: Limits
    private let now: @Sendable () -> ContinuousClock.Instant
    private let observe: @Sendable (Event) -> Void
    private let state = Mutex(State())

    private struct Slot {
        let kind: LinkKind
        let source: String
        let deadline: ContinuousClock.Instant
    }

    private struct State {
        var nextID: UInt64 = 0
        var slots: [UInt64: Slot] = [:]
        var perSource: [String: Int] = [:]

        /// Frees `id`'s slot; its slot if it held one.
        mutating func remove(_ id: UInt64) -> Slot? {
            guard let slot = slots.removeValue(forKey: id) else { return nil }
            let left = perSource[slot.source, default: 1] - 1
            perSource[slot.source] = left > 0 ? left : nil
            return slot
        }
    }

    /// - Parameters:
    ///   - now: the clock deadlines are kept on; a test gives a clock it moves itself.
    ///   - observe: told of every refusal and every settled slot.
    public init(
        limits: Limits = Limits(), now: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
        observe: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        precondition(limits.total >= 1 && limits.perSource >= 1, "pending handshake limits must allow at least one link")
        self.limits = limits
        self.now = now
        self.observe = observe
    }

    /// A slot for a link of `kind` just accepted from `source`, or nil when the gate is full or
    /// `source` has all it may have: the caller then closes the link at once.
    public func admit(_ kind: LinkKind, from source: String) -> PendingHandshake? {
        let now = self.now()
        let (admitted, expired) = state.withLock { state -> (Result<(UInt64, Slot), Refusal>, [Slot]) in
            let expired = Self.expire(&state, at: now)
            guard state.slots.count < limits.total else { return (.failure(.full), expired) }
            guard state.perSource[source, default: 0] < limits.perSource else { return (.failure(.sourceFull), expired) }
            state.nextID += 1
            let slot = Slot(kind: kind, source: source, deadline: now + limits.deadline(for: kind))
            state.slots[state.nextID] = slot
            state.perSource[source, default: 0] += 1
            return (.success((state.nextID, slot)), expired)
        }
        for slot in expired { observe(.settled(slot.kind, source: slot.source, .timedOut)) }
        switch admitted {
        case .failure(let refusal):
            observe(.refused(kind, source: source, refusal))
            return nil
        case .success(let (id, slot)):
            return PendingHandshake(gate: self, id: id, kind: kind, source: source, deadline: slot.deadline)
        }
    }

    /// Links pending now (those past their deadline no longer count).
    public var count: Int {
        let now = self.now()
        let (count, expired) = state.withLock { state in
            let expired = Self.expire(&state, at: now)
            return (state.slots.count, expired)
        }
        for slot in expired { observe(.settled(slot.kind, source: slot.source, .timedOut)) }
        return count
    }

    /// Links pending now from `source`.
    public func count(from source: String) -> Int {
        _ = count
        return state.withLock { $0.perSource[source, default: 0] }
    }

    /// Frees the slots whose deadline has passed and returns them.
    private static func expire(_ state: inout State, at now: ContinuousClock.Instant) -> [Slot] {
        let due = state.slots.filter { $0.value.deadline <= now }.keys
        return due.compactMap { state.remove($0) }
    }

    fileprivate func settle(_ id: UInt64, _ outcome: Outcome) {
        let now = self.now()
        let (slot, expired) = state.withLock { state -> (Slot?, [Slot]) in
            // A slot past its deadline timed out, whatever its owner says now.
            let expired = Self.expire(&state, at: now)
            return (state.remove(id), expired)
        }
        for slot in expired { observe(.settled(slot.kind, source: slot.source, .timedOut)) }
        if let slot { observe(.settled(slot.kind, source: slot.source, outcome)) }
    }

    fileprivate func remaining(until deadline: ContinuousClock.Instant) -> Duration {
        max(.zero, deadline - now())
    }
}

/// One accepted link's slot in `PendingHandshakes`, from the accept to the end of its handshake.
/// Settle it once the handshake has ended; settling again does nothing.
public final class PendingHandshake: Sendable, CustomStringConvertible {
    public let kind: LinkKind
    /// Where the link came from, as its transport names sources.
    public let source: String
    /// When the slot frees itself; the owner must have closed the link by then.
    public let deadline: ContinuousClock.Instant
    private let gate: PendingHandshakes
    private let id: UInt64

    fileprivate init(gate: PendingHandshakes, id: UInt64, kind: LinkKind, source: String, deadline: ContinuousClock.Instant) {
        self.gate = gate
        self.id = id
        self.kind = kind
        self.source = source
        self.deadline = deadline
    }

    /// The time left until the deadline, on the gate's clock (zero once past).
    public var remaining: Duration { gate.remaining(until: deadline) }

    /// Whether this slot is in `gate` (whose observer then counts it).
    public func isHeld(by gate: PendingHandshakes) -> Bool { self.gate === gate }

    /// Frees the slot, counting how the handshake ended.
    public func settle(_ outcome: PendingHandshakes.Outcome) {
        gate.settle(id, outcome)
    }

    public var description: String { "pending \(kind.rawValue) handshake from \(source)" }
}
