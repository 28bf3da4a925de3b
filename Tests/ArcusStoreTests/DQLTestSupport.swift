import ArcusCRDT
import Foundation
import Testing

@testable import ArcusStore

/// Shorthands the DQL specification tests share.
enum DQL {
    static func statement(_ text: String) throws(DQLError) -> DQLStatement { try DQLParser.parse(text) }

    static func select(_ text: String) throws -> DQLSelect {
        guard case .select(let s) = try DQLParser.parse(text) else { throw Unexpected(text) }
        return s
    }

    static func expression(_ text: String) throws(DQLError) -> DQLExpression { try DQLParser.parseExpression(text) }

    /// The fully parenthesised form of an expression: how precedence tests read the tree.
    static func shape(_ text: String) throws(DQLError) -> String { try DQLParser.parseExpression(text).description }

    /// Evaluates `text` against `document`; `nil` is MISSING.
    static func eval(_ text: String, _ document: Value = [:], _ arguments: [String: Value] = [:]) throws(DQLError) -> Value? {
        try DQLEvaluator.evaluate(DQLParser.parseExpression(text), in: document, arguments: arguments)
    }

    /// Whether `condition` (a WHERE clause) matches `document`.
    static func matches(_ condition: String, _ document: Value, _ arguments: [String: Value] = [:]) throws(DQLError) -> Bool {
        try DQLEvaluator.matches(where: DQLParser.parseExpression(condition), document: document, arguments: arguments)
    }

    /// The error parsing `text` throws, or `nil` if it parses.
    static func parseError(_ text: String) -> DQLError? {
        do {
            _ = try DQLParser.parse(text)
            return nil
        } catch {
            return error
        }
    }

    struct Unexpected: Error, CustomStringConvertible {
        var description: String
        init(_ what: String) { description = "unexpected statement kind for: \(what)" }
    }
}

/// SplitMix64: small, fast and replayable. Randomised tests print their seed and take
/// `ARCUS_TEST_SEED` from the environment to replay one.
struct DQLRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    static func seed(for test: String) -> UInt64 {
        if let text = ProcessInfo.processInfo.environment["ARCUS_TEST_SEED"], let seed = UInt64(text) {
            print("\(test): replaying seed: \(seed)")
            return seed
        }
        var system = SystemRandomNumberGenerator()
        let seed = system.next()
        print("\(test): seed: \(seed) (replay with ARCUS_TEST_SEED=\(seed))")
        return seed
    }
}
