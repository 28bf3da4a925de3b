import ArcusMesh
import Synchronization

/// One end of a loopback pair.
enum LoopbackSide: Int, Sendable {
    case a = 0, b = 1

    var peer: LoopbackSide { self == .a ? .b : .a }
}

/// What the two ends of a loopback pair share: for each direction, the messages in flight, the
/// senders waiting for room and the consumer waiting for a message, all under one lock.
///
/// Every wait is a continuation and every delay a sleeping task that exists only while someone
/// waits for it, so an idle pair costs neither a thread nor a task, and closing cancels them all.
final class LoopbackConnection: Sendable {
    let conditions: LoopbackConditions
    private let state: Mutex<State>

    init(conditions: LoopbackConditions, random: some RandomNumberGenerator & Sendable) {
        conditions.validate()
        self.conditions = conditions
        self.state = Mutex(State(random: random))
    }

    // MARK: Sending

    func send(_ message: [UInt8], from side: LoopbackSide) async throws {
        guard message.count <= conditions.mtu else {
            throw LinkError.messageTooLarge(size: message.count, mtu: conditions.mtu)
        }
        var wakeups = Wakeups()
        let (firstLook, id): (SendAttempt, UInt64) = state.withLock { state in
            let attempt = state.trySend(message, from: side, conditions: conditions, wakeups: &wakeups)
            return (attempt, state.makeWaiterID())
        }
        wakeups.perform()
        switch firstLook {
        case .sent: return
        case .closed: throw LinkError.closed
        case .mustWait, .cancelled: break
        }

        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                var wakeups = Wakeups()
                let attempt: SendAttempt = state.withLock { state in
                    // Room may have opened, or the link closed, since the first look.
                    let attempt = state.trySend(message, from: side, conditions: conditions, wakeups: &wakeups)
                    guard case .mustWait = attempt else { return attempt }
                    // Checked under the lock: the cancellation handler takes it too, and runs only
                    // after the flag is set, so it either finds this sender queued or this sees the flag.
                    guard !Task.isCancelled else { return .cancelled }
                    state.ends[side].blockedSenders.append(BlockedSend(id: id, message: message, continuation: continuation))
                    return .mustWait
                }
                wakeups.perform()
                switch attempt {
                case .sent: continuation.resume()
                case .closed: continuation.resume(throwing: LinkError.closed)
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .mustWait: break
                }
            }
        } onCancel: {
            let blocked: BlockedSend? = state.withLock { state in
                guard let index = state.ends[side].blockedSenders.firstIndex(where: { $0.id == id }) else { return nil }
                return state.ends[side].blockedSenders.remove(at: index)
            }
            blocked?.continuation.resume(throwing: CancellationError())
        }
    }

    // MARK: Receiving

    /// The next message for `side`'s consumer, once it has arrived; nil when `side` is closed or
    /// the consumer's task is cancelled.
    func receive(at side: LoopbackSide) async -> [UInt8]? {
        while true {
            var wakeups = Wakeups()
            let firstLook: Take = state.withLock { state in
                state.take(at: side, now: .now, conditions: conditions, wakeups: &wakeups)
            }
            wakeups.perform()
            switch firstLook {
            case .message(let message): return message
            case .finished: return nil
            case .nothingYet: break
            }

            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let waiting: Bool = state.withLock { state in
                        guard !state.ends[side].isClosed, !Task.isCancelled else { return false }
                        precondition(state.ends[side].receiver == nil, "a link's incoming messages have one consumer")
                        // Look again: a message may have arrived or come due since the first look.
                        guard let head = state.ends[side.peer].outbound.first else {
                            state.ends[side].receiver = WaitingReceiver(continuation: continuation, timer: nil)
                            return true
                        }
                        guard head.arrival > .now else { return false }
                        let timer = Task { [self] in
                            try? await Task.sleep(until: head.arrival, clock: .continuous)
                            guard !Task.isCancelled else { return }
                            wakeReceiver(at: side)
                        }
                        state.ends[side].receiver = WaitingReceiver(continuation: continuation, timer: timer)
                        return true
                    }
                    if !waiting { continuation.resume() }
                }
            } onCancel: {
                wakeReceiver(at: side)
            }
            if Task.isCancelled { return nil }
        }
    }

    private func wakeReceiver(at side: LoopbackSide) {
        let receiver: WaitingReceiver? = state.withLock { state in
            defer { state.ends[side].receiver = nil }
            return state.ends[side].receiver
        }
        receiver?.wake()
    }

    // MARK: Closing

    /// Closes both ends at once.
    func close() {
        var wakeups = Wakeups()
        state.withLock { state in
            state.close(.a, wakeups: &wakeups)
            state.close(.b, wakeups: &wakeups)
        }
        wakeups.perform()
    }

    /// Closes `side` at once and its peer after `delay`, the time the peer takes to notice that
    /// `side` is gone; until then the peer hears nothing and its sends fill the queue.
    func drop(_ side: LoopbackSide, peerNoticesAfter delay: Duration) {
        guard delay > .zero else { return close() }
        var wakeups = Wakeups()
        state.withLock { state in
            guard !state.ends[side].isClosed else { return }
            state.close(side, wakeups: &wakeups)
            guard !state.ends[side.peer].isClosed else { return }
            state.detectionTimer = Task { [self] in
                try? await Task.sleep(for: delay)
                guard !Task.isCancelled else { return }
                close(side.peer)
            }
        }
        wakeups.perform()
    }

    private func close(_ side: LoopbackSide) {
        var wakeups = Wakeups()
        state.withLock { state in state.close(side, wakeups: &wakeups) }
        wakeups.perform()
    }

    // MARK: Observing

    func statistics(of side: LoopbackSide) -> LinkStatistics {
        state.withLock { state in state.ends[side].statistics }
    }

    func messagesLost(from side: LoopbackSide) -> Int {
        state.withLock { state in state.ends[side].messagesLost }
    }

    func bytesInFlight(from side: LoopbackSide) -> Int {
        state.withLock { state in state.ends[side].bytesInFlight }
    }

    func isClosed(_ side: LoopbackSide) -> Bool {
        state.withLock { state in state.ends[side].isClosed }
    }
}

// MARK: - State

private struct InFlightMessage {
    let bytes: [UInt8]
    let arrival: ContinuousClock.Instant
}

private struct BlockedSend {
    let id: UInt64
    let message: [UInt8]
    let continuation: CheckedContinuation<Void, any Error>
}

private struct WaitingReceiver {
    let continuation: CheckedContinuation<Void, Never>
    /// Wakes the receiver when the message at the head of the queue arrives.
    let timer: Task<Void, Never>?

    func wake() {
        timer?.cancel()
        continuation.resume()
    }
}

private enum SendAttempt {
    case sent, mustWait, closed, cancelled
}

private enum Take {
    case message([UInt8])
    case nothingYet
    case finished
}

/// The continuations to resume and the timers to cancel once the lock is released.
private struct Wakeups {
    var admittedSenders: [CheckedContinuation<Void, any Error>] = []
    var failedSenders: [CheckedContinuation<Void, any Error>] = []
    var receivers: [WaitingReceiver] = []
    var timers: [Task<Void, Never>] = []

    func perform() {
        for sender in admittedSenders { sender.resume() }
        for sender in failedSenders { sender.resume(throwing: LinkError.closed) }
        for receiver in receivers { receiver.wake() }
        for timer in timers { timer.cancel() }
    }
}

/// One end: what it has sent that its peer has not taken, and who waits on it.
private struct End {
    var isClosed = false
    /// Oldest first; arrival times never decrease, since a direction serialises one message
    /// after another and adds the same latency to each.
    var outbound = FIFOQueue<InFlightMessage>()
    var bytesInFlight = 0
    /// When this end's direction has finished serialising everything it was given.
    var transmitterFreeAt = ContinuousClock.now
    /// Senders waiting for room, in the order they came.
    var blockedSenders: [BlockedSend] = []
    /// This end's consumer, waiting for the peer's next message.
    var receiver: WaitingReceiver?
    var statistics = LinkStatistics()
    var messagesLost = 0
}

private struct State {
    var ends = [End(), End()]
    var random: any RandomNumberGenerator & Sendable
    var nextWaiterID: UInt64 = 0
    /// Closes the surviving end of a dropped pair once it would have noticed.
    var detectionTimer: Task<Void, Never>?

    init(random: some RandomNumberGenerator & Sendable) {
        self.random = random
    }

    mutating func makeWaiterID() -> UInt64 {
        defer { nextWaiterID += 1 }
        return nextWaiterID
    }

    /// Sends `message` if there is room and no earlier sender is waiting for it.
    mutating func trySend(
        _ message: [UInt8], from side: LoopbackSide, conditions: LoopbackConditions, wakeups: inout Wakeups
    ) -> SendAttempt {
        guard !ends[side].isClosed else { return .closed }
        guard ends[side].blockedSenders.isEmpty, hasRoom(for: message.count, from: side, conditions: conditions) else {
            return .mustWait
        }
        admit(message, from: side, conditions: conditions, wakeups: &wakeups)
        return .sent
    }

    /// Whether `side` may put `byteCount` more bytes in flight. A message larger than the whole
    /// queue goes alone, so that it cannot wait forever.
    func hasRoom(for byteCount: Int, from side: LoopbackSide, conditions: LoopbackConditions) -> Bool {
        let inFlight = ends[side].bytesInFlight
        return inFlight == 0 || inFlight + byteCount <= conditions.queueLimitBytes
    }

    /// Puts `message` on the air: it arrives after the messages before it have been serialised,
    /// its own serialisation, and the latency; or, with probability `lossRate`, never.
    mutating func admit(_ message: [UInt8], from side: LoopbackSide, conditions: LoopbackConditions, wakeups: inout Wakeups) {
        let start = max(ContinuousClock.now, ends[side].transmitterFreeAt)
        let serialised = start + conditions.serializationTime(of: message.count)
        ends[side].transmitterFreeAt = serialised
        ends[side].statistics.messagesSent += 1
        ends[side].statistics.bytesSent += message.count
        if conditions.lossRate > 0, Double.random(in: 0..<1, using: &random) < conditions.lossRate {
            ends[side].messagesLost += 1
            return
        }
        let wasEmpty = ends[side].outbound.isEmpty
        ends[side].outbound.append(InFlightMessage(bytes: message, arrival: serialised + conditions.latency))
        ends[side].bytesInFlight += message.count
        // A consumer waits with a timer only for a message already queued; one that found the
        // queue empty waits for this.
        if wasEmpty, let receiver = ends[side.peer].receiver {
            ends[side.peer].receiver = nil
            wakeups.receivers.append(receiver)
        }
    }

    /// Takes the message at the head of the queue toward `side`, if it has arrived, and lets
    /// waiting senders fill the room it leaves.
    mutating func take(at side: LoopbackSide, now: ContinuousClock.Instant, conditions: LoopbackConditions, wakeups: inout Wakeups) -> Take {
        guard !ends[side].isClosed else { return .finished }
        let sender = side.peer
        guard let head = ends[sender].outbound.first, head.arrival <= now else { return .nothingYet }
        _ = ends[sender].outbound.popFirst()
        ends[sender].bytesInFlight -= head.bytes.count
        ends[side].statistics.messagesReceived += 1
        ends[side].statistics.bytesReceived += head.bytes.count
        while let next = ends[sender].blockedSenders.first, hasRoom(for: next.message.count, from: sender, conditions: conditions) {
            ends[sender].blockedSenders.removeFirst()
            admit(next.message, from: sender, conditions: conditions, wakeups: &wakeups)
            wakeups.admittedSenders.append(next.continuation)
        }
        return .message(head.bytes)
    }

    /// Closes one end: what it sent and its peer has not taken is lost, its waiting senders fail,
    /// its consumer's stream finishes.
    mutating func close(_ side: LoopbackSide, wakeups: inout Wakeups) {
        guard !ends[side].isClosed else { return }
        ends[side].isClosed = true
        ends[side].outbound.removeAll()
        ends[side].bytesInFlight = 0
        wakeups.failedSenders += ends[side].blockedSenders.map(\.continuation)
        ends[side].blockedSenders = []
        // This end's consumer finishes; the peer's may be waiting on a message that is now gone.
        for end in [side, side.peer] {
            if let receiver = ends[end].receiver {
                ends[end].receiver = nil
                wakeups.receivers.append(receiver)
            }
        }
        if ends[side.peer].isClosed, let detectionTimer {
            self.detectionTimer = nil
            wakeups.timers.append(detectionTimer)
        }
    }
}

extension Array where Element == End {
    fileprivate subscript(side: LoopbackSide) -> End {
        get { self[side.rawValue] }
        _modify { yield &self[side.rawValue] }
    }
}
