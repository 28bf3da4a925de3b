import ArcusAgent
import ArcusCRDT

/// Documents shaped like the fleet trace's (shared/bench/gen_trace.py): three to eight fields
/// from the same vocabulary, with words, numbers, booleans, nulls, ISO dates, short arrays and
/// small nested maps. Every document also carries `flightNo` = "FL" + (n mod 1000), so an
/// equality query on it matches one document in a thousand.
struct FleetDocuments {
    static let words = ["red", "blue", "green", "open", "in_progress", "complete", "filled", "cancelled",
                        "vegan", "chicken", "pasta", "fish", "window", "aisle", "crew", "DIT101", "DIT202"]
    static let fields = ["status", "color", "seat", "meal", "note", "owner", "make", "zone", "level", "temp",
                         "humidity", "battery", "createdAt", "updatedAt", "qty"]
    static let flights = 1000

    private var random: SplitMix64

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    static func id(_ n: Int) -> String {
        let digits = String(n)
        return "d" + String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }

    static func flight(_ n: Int) -> String {
        let digits = String(n % flights)
        return "FL" + String(repeating: "0", count: 3 - digits.count) + digits
    }

    mutating func document(_ n: Int) -> [String: Value] {
        var document: [String: Value] = ["_id": .string(Self.id(n)), "flightNo": .string(Self.flight(n))]
        for name in Self.fields.shuffled(using: &random).prefix(Int.random(in: 3...8, using: &random)) {
            document[name] = value(nested: true)
        }
        return document
    }

    private mutating func value(nested: Bool) -> Value {
        let k = Double.random(in: 0..<1, using: &random)
        if k < 0.08 {
            return .array((0..<Int.random(in: 2...3, using: &random)).map { _ in .double(rounded(Double.random(in: -180...180, using: &random), 4)) })
        }
        if nested && k < 0.20 {
            var map: [String: Value] = [:]
            for _ in 0..<Int.random(in: 1...3, using: &random) { map[Self.fields.randomElement(using: &random)!] = scalar() }
            return .object(map)
        }
        return scalar()
    }

    mutating func scalar() -> Value {
        let k = Double.random(in: 0..<1, using: &random)
        switch k {
        case ..<0.35: return .string(Self.words.randomElement(using: &random)!)
        case ..<0.55: return .int(Int64.random(in: -1000...100_000, using: &random))
        case ..<0.75: return .double(rounded(Double.random(in: -50...150, using: &random), 2))
        case ..<0.85: return .bool(Bool.random(using: &random))
        case ..<0.90: return .null
        default:
            func two(_ range: ClosedRange<Int>) -> String {
                let n = Int.random(in: range, using: &random)
                return n < 10 ? "0\(n)" : "\(n)"
            }
            return .string("2026-\(two(1...12))-\(two(1...28))T\(two(0...23)):\(two(0...59)):\(two(0...59))Z")
        }
    }

    private func rounded(_ x: Double, _ digits: Int) -> Double {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        return (x * scale).rounded() / scale
    }
}
