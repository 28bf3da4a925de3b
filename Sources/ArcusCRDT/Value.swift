/// A JSON-like value: what a document field holds and what queries return.
///
/// Integers are kept exact as `Int64`; a number with a fraction or exponent is a `Double`.
/// `Double` values are always finite: NaN and the infinities are refused where values enter
/// (JSON parsing, the codec), so that every value has one JSON form and equality is total.
/// `binary` holds raw bytes; in JSON it is written as `{"$binary": "<base64>"}`.
public enum Value: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case binary([UInt8])
    case array([Value])
    case object([String: Value])
}

extension Value {
    /// The deepest nesting of arrays and objects that Arcus accepts anywhere (documents, DQL
    /// arguments, decoded frames). Deeper input is refused with an error, never a crash.
    public static let maximumNestingDepth = 64

    /// How deep the arrays and objects in this value nest; a scalar is 0.
    public var nestingDepth: Int {
        switch self {
        case .array(let items): return 1 + (items.lazy.map(\.nestingDepth).max() ?? 0)
        case .object(let fields): return 1 + (fields.values.lazy.map(\.nestingDepth).max() ?? 0)
        default: return 0
        }
    }

    public var isNull: Bool { if case .null = self { return true } else { return false } }

    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }

    public var objectValue: [String: Value]? { if case .object(let o) = self { return o } else { return nil } }

    /// The value as a `Double` when it is a number of either kind.
    public var numberValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The field at `path` inside nested objects, or `nil` when any step is missing.
    public subscript(path path: FieldPath) -> Value? {
        var current = self
        for key in path.components {
            guard case .object(let fields) = current, let next = fields[key] else { return nil }
            current = next
        }
        return current
    }
}

extension Value: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: Value...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, Value)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
