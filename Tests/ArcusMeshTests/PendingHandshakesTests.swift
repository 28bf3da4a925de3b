import ArcusMesh
import ArcusTestSupport
import Synchronization
import Testing

/// The cap on half-open links, on a clock the test moves itself: nothing here waits.
@Suite("Pending handshakes: the cap on half-open links")
struct PendingHandshakesTests {
    /// A clock that stands still until the test moves it.
    final class TestClock: Sendable {
        private let instant = Mutex(ContinuousClock.now)
        var now: ContinuousClock.Instant { instant.withLock { $0 } }
        func advance(_ duration: Duration) { instant.withLock { $0 += duration } }
    }

    /// Everything the gate reported.
    final class Events: Sendable {
        private let events = Mutex<[PendingHandshakes.Event]>([])
        func record(_ event: PendingHandshakes.Event) { events.withLock { $0.append(event) } }
        var all: [PendingHandshakes.Event] { events.withLock { $0 } }
        func count(_ event: PendingHandshakes.Event) -> Int { all.filter { $0 == event }.count }
    }

    static func gate(total: Int, perSource: Int, deadline: Duration = .seconds(5)) -> (PendingHandshakes, TestClock, Events) {
        let clock = TestClock()
        let events = Events()
        var limits = PendingHandshakes.Limits()
        limits.total = total
        limits.perSource = perSource
        limits.setDeadline(deadline)
        return (PendingHandshakes(limits: limits, now: { clock.now }, observe: events.record), clock, events)
    }

    @Test("past the per-source cap a source is refused while others are still let in")
    func perSourceCap() {
        let (gate, _, events) = Self.gate(total: 10, perSource: 3)
        let held = (0..<3).compactMap { _ in gate.admit(.lan, from: "10.0.0.9") }
        #expect(held.count == 3)
        #expect(gate.admit(.lan, from: "10.0.0.9") == nil)
        #expect(events.count(.refused(.lan, source: "10.0.0.9", .sourceFull)) == 1)
        #expect(gate.admit(.lan, from: "10.0.0.10") != nil)
        #expect(gate.count == 4 && gate.count(from: "10.0.0.9") == 3)
    }

    @Test("past the total cap everyone is refused, until a slot is settled")
    func totalCap() {
        let (gate, _, events) = Self.gate(total: 4, perSource: 4)
        let held = (0..<4).compactMap { gate.admit(.bluetooth, from: "device \($0)") }
        #expect(held.count == 4)
        #expect(gate.admit(.bluetooth, from: "device 9") == nil)
        #expect(events.count(.refused(.bluetooth, source: "device 9", .full)) == 1)

        held[0].settle(.completed)
        held[0].settle(.failed)  // a second settle counts nothing
        #expect(events.count(.settled(.bluetooth, source: "device 0", .completed)) == 1)
        #expect(events.all.filter { if case .settled(_, _, .failed) = $0 { true } else { false } }.isEmpty)
        #expect(gate.admit(.bluetooth, from: "device 9") != nil)
    }

    @Test("a slot frees itself at its deadline, counted as timed out, whatever its owner does")
    func deadlineFreesTheSlot() {
        let (gate, clock, events) = Self.gate(total: 2, perSource: 2, deadline: .seconds(5))
        let first = gate.admit(.lan, from: "a")
        let second = gate.admit(.lan, from: "a")
        #expect(first != nil && second != nil && gate.admit(.lan, from: "a") == nil)
        #expect(first?.remaining == .seconds(5))

        clock.advance(.seconds(3))
        #expect(first?.remaining == .seconds(2))
        #expect(gate.admit(.lan, from: "a") == nil, "before the deadline the slots are still held")

        clock.advance(.seconds(2))
        #expect(first?.remaining == .zero)
        #expect(gate.count == 0)
        #expect(events.count(.settled(.lan, source: "a", .timedOut)) == 2)
        // The owner learns late: its word no longer counts, the timeout did.
        first?.settle(.completed)
        #expect(events.count(.settled(.lan, source: "a", .completed)) == 0)
        #expect(gate.admit(.lan, from: "a") != nil && gate.admit(.lan, from: "a") != nil)
    }

    @Test("each transport has its own deadline: Bluetooth handshakes may take seconds")
    func deadlinesByTransport() {
        let clock = TestClock()
        let gate = PendingHandshakes(now: { clock.now })
        let lan = gate.admit(.lan, from: "x"), ble = gate.admit(.bluetooth, from: "y"), cloud = gate.admit(.cloud, from: "z")
        #expect(lan?.remaining == PendingHandshakes.Limits().lanDeadline)
        #expect(ble?.remaining == PendingHandshakes.Limits().bluetoothDeadline)
        #expect(cloud?.remaining == PendingHandshakes.Limits().cloudDeadline)
        #expect(PendingHandshakes.Limits().lanDeadline < PendingHandshakes.Limits().bluetoothDeadline)
    }

    @Test("a flood from many sources never holds more than the total, and every link is counted once",
          arguments: SeededRandom.seeds(count: 3, test: "pending-handshakes-flood"))
    func floodIsBounded(seed: UInt64) {
        print("pending-handshakes-flood: seed \(seed) (ARCUS_TEST_SEED=\(seed) replays it)")
        var random = SeededRandom(seed: seed)
        let (gate, clock, events) = Self.gate(total: 16, perSource: 3, deadline: .seconds(5))
        var held: [PendingHandshake] = []
        var refused = 0
        for _ in 0..<2_000 {
            let source = "10.0.\(random.next() % 8).\(random.next() % 4)"
            if let slot = gate.admit(.lan, from: source) { held.append(slot) } else { refused += 1 }
            #expect(gate.count <= 16)
            #expect(gate.count(from: source) <= 3)
            if random.next() % 4 == 0, !held.isEmpty {
                held.remove(at: Int(random.next() % UInt64(held.count))).settle(random.next() % 2 == 0 ? .failed : .completed)
            }
            clock.advance(.milliseconds(Int64(random.next() % 50)))
        }
        clock.advance(.seconds(5))
        #expect(gate.count == 0)
        let settled = events.all.filter { if case .settled = $0 { true } else { false } }.count
        let refusals = events.all.filter { if case .refused = $0 { true } else { false } }.count
        #expect(refusals == refused)
        #expect(settled + refusals == 2_000, "every link is counted once: \(settled) settled, \(refusals) refused")
    }
}
