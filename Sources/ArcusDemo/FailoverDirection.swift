import ArcusAgent
import ArcusCRDT
import ArcusMesh
import Synchronization

/// One direction of the failover demo: the sender's numbered messages and what the receiver took,
/// when, and over which kind of link the receiver's session was then hearing data.
final class FailoverDirection: Sendable {
    let name: String
    let sender: PeerSession
    let receiver: PeerSession
    private let state = Mutex(State())

    private struct State {
        var sent = 0
        var arrivals: [(index: Int, at: ContinuousClock.Instant, kinds: Set<LinkKind>)] = []
        var consumer: Task<Void, Never>?
    }

    init(name: String, sender: PeerSession, receiver: PeerSession) {
        self.name = name
        self.sender = sender
        self.receiver = receiver
    }

    var sent: Int { state.withLock { $0.sent } }
    var receivedCount: Int { state.withLock { $0.arrivals.count } }

    /// Sends a numbered message every `interval` until `end`; a backlog (backpressure during the
    /// failover) is caught up, so the count follows the clock.
    func write(every interval: Duration, until end: ContinuousClock.Instant, seed: UInt64) async throws {
        var random = SplitMix64(seed: seed)
        var next = ContinuousClock.now
        var index = 0
        while next < end {
            var message = withUnsafeBytes(of: UInt64(index).bigEndian, Array.init)
            message += (0..<Int.random(in: 8...120, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            try await sender.send(message)
            state.withLock { $0.sent += 1 }
            index += 1
            next = next + interval
            try await Task.sleep(until: next, clock: .continuous)
        }
    }

    func startReceiving() {
        let task = Task { [self] in
            var lastFrames: [Int: Int] = [:]
            for await message in receiver.incoming {
                guard message.count >= 8 else { continue }
                let index = message.prefix(8).reduce(0) { $0 << 8 | Int($1) }
                // The links whose data count moved since the last message: where this one came from.
                let links = await receiver.linkStatuses
                var kinds = Set<LinkKind>()
                for link in links where link.dataFramesReceived != lastFrames[link.number] {
                    kinds.insert(link.kind)
                    lastFrames[link.number] = link.dataFramesReceived
                }
                self.state.withLock { $0.arrivals.append((index, .now, kinds)) }
            }
        }
        state.withLock { $0.consumer = task }
    }

    /// When the first message numbered `index` or more arrived: one sent at or after that count.
    func firstArrival(ofIndexAtLeast index: Int) -> ContinuousClock.Instant? {
        state.withLock { state in state.arrivals.first { $0.index >= index }?.at }
    }

    /// When the first message after `instant` arrived (over a link of `kind`, if given).
    func firstArrival(after instant: ContinuousClock.Instant, onKind kind: LinkKind? = nil) -> ContinuousClock.Instant? {
        state.withLock { state in
            state.arrivals.first { $0.at > instant && (kind.map($0.kinds.contains) ?? true) }?.at
        }
    }

    /// Messages sent that never arrived, arrived twice, or arrived before one sent earlier.
    func outcome() -> (lost: Int, duplicated: Int, reordered: Int) {
        state.withLock { state in
            let indices = state.arrivals.map(\.index)
            let distinct = Set(indices)
            let reordered = zip(indices, indices.dropFirst()).filter { $0 >= $1 }.count
            let lost = (0..<state.sent).filter { !distinct.contains($0) }.count
            state.consumer?.cancel()
            return (lost, indices.count - distinct.count, reordered)
        }
    }
}
