import Foundation

/// A small, fast, replayable generator (SplitMix64). Randomised tests print their seed and take
/// `ARCUS_TEST_SEED` from the environment to replay a failure.
public struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The seeds a randomised test runs: the one in ARCUS_TEST_SEED, or `count` fresh ones.
    public static func seeds(count: Int, test: String) -> [UInt64] {
        if let text = ProcessInfo.processInfo.environment["ARCUS_TEST_SEED"], let seed = UInt64(text) {
            print("\(test): replaying seed \(seed)")
            return [seed]
        }
        var system = SystemRandomNumberGenerator()
        return (0..<count).map { _ in system.next() }
    }
}
