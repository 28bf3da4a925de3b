/// A counter amount: exact while every increment is an integer and the sum fits in 64 bits,
/// a `Double` from then on.
public enum Number: Sendable, Hashable, CustomStringConvertible {
    case int(Int64)
    case double(Double)

    public static let zero = Number.int(0)

    public init?(_ value: Value) {
        switch value {
        case .int(let i): self = .int(i)
        case .double(let d) where d.isFinite: self = .double(d)
        default: return nil
        }
    }

    public var value: Value {
        switch self {
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        }
    }

    public var doubleValue: Double {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        }
    }

    public static func + (lhs: Number, rhs: Number) -> Number {
        if case .int(let a) = lhs, case .int(let b) = rhs {
            let (sum, overflow) = a.addingReportingOverflow(b)
            if !overflow { return .int(sum) }
        }
        return .double(lhs.doubleValue + rhs.doubleValue)
    }

    public static prefix func - (operand: Number) -> Number {
        switch operand {
        case .int(let i) where i != .min: return .int(-i)
        default: return .double(-operand.doubleValue)
        }
    }

    public static func - (lhs: Number, rhs: Number) -> Number { lhs + (-rhs) }

    public var description: String {
        switch self {
        case .int(let i): return String(i)
        case .double(let d): return d.description
        }
    }
}
