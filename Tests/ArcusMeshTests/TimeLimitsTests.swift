import ArcusTransportConformance
import Synchronization
import Testing

/// `within`, the limit every transport test puts on its steps: a step that overruns fails the
/// test on time, even when what it awaits ignores cancellation.
@Suite("Step time limits")
struct TimeLimitsTests {
    @Test("a step that ignores cancellation fails at its limit, without waiting for the step to end")
    func stepIgnoringCancellation() async throws {
        let gate = Gate()
        // Opened late, so that a `within` that waits for the step does end, and says so below.
        let opener = Task {
            try? await Task.sleep(for: .seconds(10))
            gate.open()
        }
        defer { opener.cancel(); gate.open() }
        await #expect(throws: StepTimedOut.self) {
            try await within(.milliseconds(100), "a step that ignores cancellation") { await gate.wait() }
        }
        #expect(!gate.isOpen, "within returned only once the step ended")
    }

    @Test("a step that ends in time gives its result, and its error")
    func stepInTime() async throws {
        #expect(try await within(.seconds(30), "adding") { 20 + 22 } == 42)
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await within(.seconds(30), "refusing") { throw Refused() }
        }
    }

    @Test("cancelling the test cancels its step")
    func cancellationReachesTheStep() async throws {
        let step = Task {
            try await within(.seconds(60), "sleeping") { try await Task.sleep(for: .seconds(60)) }
        }
        step.cancel()
        await #expect(throws: CancellationError.self) { try await step.value }
    }
}

/// Something a step waits on without a cancellation handler, as a careless await would.
private final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    var isOpen: Bool { state.withLock { $0.open } }

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state in
                if !state.open { state.waiting.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiting = state.withLock { state in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
