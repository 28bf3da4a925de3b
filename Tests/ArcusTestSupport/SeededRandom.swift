import ArcusCRDT
import Foundation

/// Randomised tests print their seed and take `ARCUS_TEST_SEED` from the environment to replay
/// a failure; the generator is ArcusCRDT's SplitMix64.
public typealias SeededRandom = SplitMix64

extension SplitMix64 {
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
