/// Polls `condition` every 10 ms until it holds; false once `seconds` have passed.
///
/// Generous by default: a test target's tests run at once, and on two cores a step that takes
/// milliseconds alone took 21 s in that crowd (a 20 s wait failed in CI). The limit only bounds
/// a hang; a wait never asserts speed.
public func eventually(_ seconds: Double = 60, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        // A cancelled test stops polling at once instead of spinning until the deadline.
        do { try await Task.sleep(for: .milliseconds(10)) } catch { break }
    }
    return try await condition()
}
