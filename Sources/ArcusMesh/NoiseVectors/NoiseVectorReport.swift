/// What running a file of Noise test vectors found (`NoiseVectorFile.run`).
public struct NoiseVectorReport: Sendable, Equatable {
    /// Vectors whose every message, and handshake hash, matched.
    public var passed = 0
    /// One line per vector that did not: which vector, which message, what differed.
    public var failures: [String] = []
    /// Vectors of protocols the mesh does not run.
    public var skipped: Int

    public var failed: Int { failures.count }

    /// What `arcus mesh noise-vectors` prints: each failure, then the skipped count, and last
    /// "N passed, M failed".
    public var lines: [String] {
        failures + [
            "\(skipped) skipped: protocols the mesh does not run (it runs Noise_XX, with or without psk modifiers, over 25519, ChaChaPoly and SHA256)",
            "\(passed) passed, \(failed) failed",
        ]
    }
}
