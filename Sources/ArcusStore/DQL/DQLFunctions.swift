import ArcusCRDT

extension DQLEvaluator {
    /// Runs a built-in function. Arity was checked by the parser.
    ///
    /// - `length(x)`: Unicode scalars of a string, elements of an array, fields of an object,
    ///   bytes of a binary; NULL for other kinds.
    /// - `lower(s)`, `upper(s)`: Unicode case mapping of a string.
    /// - `contains(s, sub)`: whether a string contains another (by scalars); with an array
    ///   first, whether it holds an element equal to the second argument.
    /// - `starts_with(s, p)`, `ends_with(s, p)`: string prefix and suffix tests.
    /// - `coalesce(a, b, …)`: the first argument that is neither MISSING nor NULL, else NULL.
    /// - `array_contains(arr, v)`: whether the array holds an element equal to `v`.
    /// - `type(x)`: `'string'`, `'number'`, `'boolean'`, `'null'`, `'array'`, `'object'`,
    ///   `'binary'` or `'missing'`.
    func call(_ function: DQLFunction, _ arguments: [DQLExpression], _ doc: Value) throws(DQLError) -> Value? {
        switch function {
        case .coalesce:
            for argument in arguments {
                if let value = try eval(argument, doc), !value.isNull { return value }
            }
            return .null
        case .type:
            guard let argument = arguments.first else { return .null }
            return .string(Self.typeName(of: try eval(argument, doc)))
        default:
            break
        }
        // The rest propagate MISSING, then NULL.
        var values: [Value] = []
        values.reserveCapacity(arguments.count)
        var sawNull = false
        for argument in arguments {
            guard let value = try eval(argument, doc) else { return nil }
            if value.isNull { sawNull = true }
            values.append(value)
        }
        if sawNull || values.count != arguments.count || values.isEmpty { return .null }
        return Self.apply(function, values)
    }

    private static func apply(_ function: DQLFunction, _ v: [Value]) -> Value {
        switch (function, v[0]) {
        case (.length, .string(let s)): return .int(Int64(s.unicodeScalars.count))
        case (.length, .array(let items)): return .int(Int64(items.count))
        case (.length, .object(let fields)): return .int(Int64(fields.count))
        case (.length, .binary(let bytes)): return .int(Int64(bytes.count))
        case (.lower, .string(let s)): return .string(s.lowercased())
        case (.upper, .string(let s)): return .string(s.uppercased())
        case (.contains, .array(let items)), (.arrayContains, .array(let items)):
            guard v.count == 2 else { return .null }
            return .bool(items.contains { DQLValues.equal($0, v[1]) })
        case (.contains, .string(let s)):
            guard v.count == 2, case .string(let sub) = v[1] else { return .null }
            return .bool(UTF8Search.contains(s, sub))
        case (.startsWith, .string(let s)):
            guard v.count == 2, case .string(let prefix) = v[1] else { return .null }
            return .bool(s.utf8.starts(with: prefix.utf8))
        case (.endsWith, .string(let s)):
            guard v.count == 2, case .string(let suffix) = v[1] else { return .null }
            return .bool(s.utf8.reversed().starts(with: suffix.utf8.reversed()))
        default:
            return .null
        }
    }
}

/// Substring search on UTF-8 bytes. Valid UTF-8 is self-synchronising, so a byte match is a
/// match of whole scalars.
enum UTF8Search {
    static func contains(_ text: String, _ needle: String) -> Bool {
        let result = text.utf8.withContiguousStorageIfAvailable { t in
            needle.utf8.withContiguousStorageIfAvailable { n in find(n, in: t) }
        }
        if let result = result ?? nil { return result }
        return find(Array(needle.utf8), in: Array(text.utf8))
    }

    private static func find<C: RandomAccessCollection>(_ needle: C, in text: C) -> Bool
    where C.Element == UInt8, C.Index == Int {
        let n = needle.count
        guard n > 0 else { return true }
        guard text.count >= n else { return false }
        let first = needle[needle.startIndex]
        var i = text.startIndex
        let last = text.endIndex - n
        while i <= last {
            if text[i] == first {
                var k = 1
                while k < n, text[i + k] == needle[needle.startIndex + k] { k += 1 }
                if k == n { return true }
            }
            i += 1
        }
        return false
    }
}

/// Arithmetic and concatenation with the evaluator's rules (see `DQLEvaluator`).
enum DQLArithmetic {
    static func apply(_ op: DQLBinaryOperator, _ a: Value?, _ b: Value?) -> Value? {
        guard let a, let b else { return nil }
        if case .string(let x) = a, case .string(let y) = b, op == .add || op == .concatenate {
            return .string(x + y)
        }
        switch (a, b) {
        case (.int(let x), .int(let y)):
            return integer(op, x, y)
        case (.int, .double), (.double, .int), (.double, .double):
            guard let x = a.numberValue, let y = b.numberValue else { return .null }
            return double(op, x, y)
        default:
            return .null
        }
    }

    private static func integer(_ op: DQLBinaryOperator, _ x: Int64, _ y: Int64) -> Value {
        switch op {
        case .add:
            let (r, overflow) = x.addingReportingOverflow(y)
            return overflow ? finite(Double(x) + Double(y)) : .int(r)
        case .subtract:
            let (r, overflow) = x.subtractingReportingOverflow(y)
            return overflow ? finite(Double(x) - Double(y)) : .int(r)
        case .multiply:
            let (r, overflow) = x.multipliedReportingOverflow(by: y)
            return overflow ? finite(Double(x) * Double(y)) : .int(r)
        case .divide:
            guard y != 0 else { return .null }
            let (remainder, remainderOverflow) = x.remainderReportingOverflow(dividingBy: y)
            if !remainderOverflow, remainder == 0 {
                let (q, overflow) = x.dividedReportingOverflow(by: y)
                if !overflow { return .int(q) }
            }
            return finite(Double(x) / Double(y))
        case .remainder:
            guard y != 0 else { return .null }
            let (r, overflow) = x.remainderReportingOverflow(dividingBy: y)
            return .int(overflow ? 0 : r)
        default:
            return .null
        }
    }

    private static func double(_ op: DQLBinaryOperator, _ x: Double, _ y: Double) -> Value {
        switch op {
        case .add: return finite(x + y)
        case .subtract: return finite(x - y)
        case .multiply: return finite(x * y)
        case .divide: return y == 0 ? .null : finite(x / y)
        case .remainder: return y == 0 ? .null : finite(x.truncatingRemainder(dividingBy: y))
        default: return .null
        }
    }

    /// Values hold only finite doubles; an infinite or NaN result is unknown.
    private static func finite(_ d: Double) -> Value { d.isFinite ? .double(d) : .null }
}
