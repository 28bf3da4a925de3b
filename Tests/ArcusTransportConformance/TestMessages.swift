import Synchronization

/// A message whose every byte follows from its index, so a receiver can tell that it arrived
/// whole, unchanged and in its place.
public func testMessage(_ index: Int, size: Int) -> [UInt8] {
    var message = [UInt8](repeating: 0, count: size)
    var state = UInt32(truncatingIfNeeded: index) &* 2_654_435_761 &+ UInt32(truncatingIfNeeded: size)
    for position in message.indices {
        state = state &* 1_103_515_245 &+ 12_345
        message[position] = UInt8(truncatingIfNeeded: state >> 24)
    }
    return message
}

/// Counts what a producer task has done, for the test that watches it.
public final class Progress: Sendable {
    private let count = Atomic(0)

    public init() {}

    public var value: Int { count.load(ordering: .acquiring) }

    public func advance() {
        count.add(1, ordering: .releasing)
    }

    /// Waits until the count stops moving for `quietPeriod` (the producer is suspended) and
    /// returns it; nil if `isDone` turns true first or `limit` passes.
    public func settled(
        quietPeriod: Duration = .milliseconds(100), limit: Duration = .seconds(45), isDone: () -> Bool
    ) async throws -> Int? {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        var last = value, quietSince = clock.now
        while clock.now < deadline {
            if isDone() { return nil }
            try await Task.sleep(for: .milliseconds(10))
            let now = value
            if now != last {
                last = now
                quietSince = clock.now
            } else if clock.now - quietSince >= quietPeriod {
                return now
            }
        }
        return nil
    }
}
