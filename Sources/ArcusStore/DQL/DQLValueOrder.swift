import ArcusCRDT

/// The result of comparing two values.
public enum DQLComparison: Int8, Sendable, Hashable {
    case less = -1
    case equal = 0
    case greater = 1

    var reversed: DQLComparison { DQLComparison(rawValue: -rawValue) ?? .equal }
}

/// The total order of values that ORDER BY sorts by; `nil` stands for MISSING.
///
/// Kinds come first, in this order: MISSING < NULL < booleans < numbers < strings < binary <
/// arrays < objects. Within a kind:
/// - booleans: false < true;
/// - numbers: by exact value, integers and doubles mixed (`1` and `1.0` are equal);
/// - strings: ISO 8601 date/date-time strings (see `ISO8601Instant`) come before other strings
///   and are ordered by the instant they denote, ties broken by their UTF-8 bytes; other
///   strings are ordered by their UTF-8 bytes, which is Unicode scalar order;
/// - binary: bytes, lexicographically;
/// - arrays: element by element in this order, a prefix first;
/// - objects: key/value pairs by ascending key, compared pairwise (key first, then value), a
///   prefix first.
///
/// The order agrees with the comparison operators wherever those are defined (same kind), except
/// that `<` between a date string and a non-date string compares text, while this order puts all
/// dates first: a total order needs that to stay transitive.
public enum DQLValueOrder {
    public static func compare(_ a: Value?, _ b: Value?) -> DQLComparison {
        let ra = rank(a)
        let rb = rank(b)
        if ra != rb { return ra < rb ? .less : .greater }
        guard let a, let b else { return .equal }
        if case .string(let x) = a, case .string(let y) = b {
            if DQLValues.bytesEqual(x, y) { return .equal }
            switch (ISO8601Instant(x), ISO8601Instant(y)) {
            case (let p?, let q?):
                if p != q { return p < q ? .less : .greater }
                return DQLValues.compareBytes(x, y)
            case (.some, .none): return .less
            case (.none, .some): return .greater
            case (.none, .none): return DQLValues.compareBytes(x, y)
            }
        }
        return DQLValues.compareSameKind(a, b) ?? .equal
    }

    /// `compare(a, b) == .less`, for `sort(by:)`.
    public static func areInIncreasingOrder(_ a: Value?, _ b: Value?) -> Bool {
        compare(a, b) == .less
    }

    /// The position of a value's kind in the order (MISSING 0 … object 7).
    public static func rank(_ value: Value?) -> Int {
        guard let value else { return 0 }
        switch value {
        case .null: return 1
        case .bool: return 2
        case .int, .double: return 3
        case .string: return 4
        case .binary: return 5
        case .array: return 6
        case .object: return 7
        }
    }
}

/// Equality and ordering of two present (non-MISSING) values, as the operators see them.
enum DQLValues {
    /// DQL equality: numbers by value, strings by bytes or, when both are ISO 8601, by instant;
    /// arrays and objects structurally with the same rules; different kinds are never equal.
    static func equal(_ a: Value, _ b: Value) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.int, .double), (.double, .int), (.double, .double): return compareNumbers(a, b) == .equal
        case (.string(let x), .string(let y)):
            if bytesEqual(x, y) { return true }
            guard let p = ISO8601Instant(x), let q = ISO8601Instant(y) else { return false }
            return p == q
        case (.binary(let x), .binary(let y)): return x == y
        case (.array(let x), .array(let y)):
            guard x.count == y.count else { return false }
            for i in x.indices where !equal(x[i], y[i]) { return false }
            return true
        case (.object(let x), .object(let y)):
            guard x.count == y.count else { return false }
            for (key, value) in x {
                guard let other = y[key], equal(value, other) else { return false }
            }
            return true
        default:
            return false
        }
    }

    /// How `<`, `<=`, `>`, `>=` see two values: `nil` when their kinds differ (the operator then
    /// yields NULL). Strings that are both ISO 8601 compare as instants, others by bytes.
    static func compareForOperator(_ a: Value, _ b: Value) -> DQLComparison? {
        if case .string(let x) = a, case .string(let y) = b {
            if let p = ISO8601Instant(x), let q = ISO8601Instant(y) {
                return p == q ? .equal : p < q ? .less : .greater
            }
            return compareBytes(x, y)
        }
        return compareSameKind(a, b)
    }

    /// Values of the same kind in the total order; `nil` when the kinds differ.
    static func compareSameKind(_ a: Value, _ b: Value) -> DQLComparison? {
        switch (a, b) {
        case (.null, .null): return .equal
        case (.bool(let x), .bool(let y)): return x == y ? .equal : (!x ? .less : .greater)
        case (.int, .int), (.int, .double), (.double, .int), (.double, .double): return compareNumbers(a, b)
        case (.string, .string): return DQLValueOrder.compare(a, b)
        case (.binary(let x), .binary(let y)): return compareSequences(x, y)
        case (.array(let x), .array(let y)):
            for i in 0..<min(x.count, y.count) {
                let c = DQLValueOrder.compare(x[i], y[i])
                if c != .equal { return c }
            }
            return x.count == y.count ? .equal : (x.count < y.count ? .less : .greater)
        case (.object(let x), .object(let y)):
            let xKeys = x.keys.sorted { compareBytes($0, $1) == .less }
            let yKeys = y.keys.sorted { compareBytes($0, $1) == .less }
            for i in 0..<min(xKeys.count, yKeys.count) {
                let k = compareBytes(xKeys[i], yKeys[i])
                if k != .equal { return k }
                let v = DQLValueOrder.compare(x[xKeys[i]], y[yKeys[i]])
                if v != .equal { return v }
            }
            return xKeys.count == yKeys.count ? .equal : (xKeys.count < yKeys.count ? .less : .greater)
        default:
            return nil
        }
    }

    /// Numbers by exact value: an `Int64` and a `Double` are compared without rounding the integer.
    static func compareNumbers(_ a: Value, _ b: Value) -> DQLComparison? {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x == y ? .equal : (x < y ? .less : .greater)
        case (.double(let x), .double(let y)): return compareDoubles(x, y)
        case (.int(let x), .double(let y)): return compareIntToDouble(x, y)
        case (.double(let x), .int(let y)): return compareIntToDouble(y, x).reversed
        default: return nil
        }
    }

    static func compareDoubles(_ x: Double, _ y: Double) -> DQLComparison {
        if x < y { return .less }
        if x > y { return .greater }
        if x == y { return .equal }
        // NaN cannot be stored in a Value; order it last to stay total anyway.
        return x.isNaN ? (y.isNaN ? .equal : .greater) : .less
    }

    static func compareIntToDouble(_ x: Int64, _ y: Double) -> DQLComparison {
        if y.isNaN { return .less }
        // 2^63 is exactly representable; every Int64 is below it and at or above -2^63.
        if y >= 9_223_372_036_854_775_808.0 { return .less }
        if y < -9_223_372_036_854_775_808.0 { return .greater }
        let whole = y.rounded(.towardZero)
        let wholeInt = Int64(whole)  // in range: checked above
        if x != wholeInt { return x < wholeInt ? .less : .greater }
        let fraction = y - whole
        return fraction == 0 ? .equal : (fraction > 0 ? .less : .greater)
    }

    /// Whether two strings have the same UTF-8 bytes (not merely canonically equivalent text).
    static func bytesEqual(_ x: String, _ y: String) -> Bool {
        x.utf8.count == y.utf8.count && compareBytes(x, y) == .equal
    }

    /// Two strings by their UTF-8 bytes (Unicode scalar order), without copying native strings.
    static func compareBytes(_ x: String, _ y: String) -> DQLComparison {
        let result = x.utf8.withContiguousStorageIfAvailable { p in
            y.utf8.withContiguousStorageIfAvailable { q in compareSequences(p, q) }
        }
        if let result = result ?? nil { return result }
        return compareSequences(Array(x.utf8), Array(y.utf8))
    }

    static func compareSequences<C: RandomAccessCollection>(_ x: C, _ y: C) -> DQLComparison
    where C.Element == UInt8, C.Index == Int {
        let n = min(x.count, y.count)
        var i = x.startIndex
        var j = y.startIndex
        for _ in 0..<n {
            let a = x[i]
            let b = y[j]
            if a != b { return a < b ? .less : .greater }
            i += 1
            j += 1
        }
        return x.count == y.count ? .equal : (x.count < y.count ? .less : .greater)
    }
}
