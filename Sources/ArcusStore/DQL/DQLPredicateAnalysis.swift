import ArcusCRDT

/// What a planner can learn from a WHERE clause without evaluating it per document.
///
/// Only conjuncts at the top level of the clause's AND are looked at, and only these forms
/// (constant = an expression with no path in it: literals, arguments, arithmetic on them):
///
///     path = constant        constant = path        path == constant
///     path IN constant       (constant evaluating to an array)
///     path < constant   (and <=, >, >=, either side)      path BETWEEN constant AND constant
///
/// where `path` is a plain field path (no array index). Every result is **necessary**: a
/// document that matches the WHERE clause satisfies each returned predicate. They are not
/// sufficient, so the store still evaluates the full clause on every candidate. Matching follows
/// DQL comparison, so an index lookup must treat `1` and `1.0` as equal and ISO 8601 strings as
/// the instants they denote (`'2026-03-04'` equals `'2026-03-04T00:00:00Z'`), or widen its lookup
/// accordingly; ranges match only values of the bound's kind (`<` across kinds is NULL).
public enum DQLPredicateAnalysis {
    /// `path` equals one of `values` in every matching document. An empty list means that no
    /// document can match (for example `x = NULL`, `x IN []`, or `x < NULL`).
    public struct Equality: Sendable, Hashable {
        public var path: FieldPath
        public var values: [Value]
    }

    /// `path op bound` holds in every matching document; `op` is `<`, `<=`, `>` or `>=`, with the
    /// path on the left. The bound is never NULL (such a predicate is an empty `Equality`).
    public struct Range: Sendable, Hashable {
        public var path: FieldPath
        public var op: DQLBinaryOperator
        public var bound: Value
    }

    /// The top-level conjuncts of a condition: the terms of its AND, or the condition itself.
    public static func conjuncts(of condition: DQLExpression?) -> [DQLExpression] {
        guard let condition else { return [] }
        if case .and(let terms) = condition { return terms }
        return [condition]
    }

    /// Every `path = constant` and `path IN constant` conjunct, constants evaluated.
    public static func equalities(in condition: DQLExpression?, arguments: [String: Value]) throws(DQLError) -> [Equality] {
        try analyse(condition, arguments: arguments).equalities
    }

    /// Every range conjunct (`BETWEEN` gives two).
    public static func ranges(in condition: DQLExpression?, arguments: [String: Value]) throws(DQLError) -> [Range] {
        try analyse(condition, arguments: arguments).ranges
    }

    /// The `_id` values a matching document can have, when the condition pins `_id` with `=` or
    /// `IN` (several such conjuncts are intersected); `nil` when it does not.
    public static func idValues(in condition: DQLExpression?, arguments: [String: Value]) throws(DQLError) -> [Value]? {
        var result: [Value]?
        for equality in try equalities(in: condition, arguments: arguments) where equality.path == FieldPath(["_id"]) {
            guard let current = result else {
                result = equality.values
                continue
            }
            result = current.filter { value in equality.values.contains { DQLValues.equal($0, value) } }
        }
        return result
    }

    /// Both lists in one pass.
    public static func analyse(_ condition: DQLExpression?, arguments: [String: Value]) throws(DQLError) -> (equalities: [Equality], ranges: [Range]) {
        let evaluator = DQLEvaluator(arguments: arguments)
        var equalities: [Equality] = []
        var ranges: [Range] = []

        func constant(_ e: DQLExpression) throws(DQLError) -> Value?? {
            guard e.isConstant else { return .none }
            return .some(try evaluator.evaluate(e, in: .object([:])))
        }

        /// Adds `path op value`, for a comparison operator with the path on the left.
        func add(_ path: FieldPath, _ op: DQLBinaryOperator, _ value: Value?) {
            // MISSING or NULL on one side makes every comparison MISSING or NULL: nothing matches.
            guard let value, !value.isNull else {
                equalities.append(Equality(path: path, values: []))
                return
            }
            switch op {
            case .equal: equalities.append(Equality(path: path, values: [value]))
            case .less, .lessOrEqual, .greater, .greaterOrEqual: ranges.append(Range(path: path, op: op, bound: value))
            default: break
            }
        }

        for conjunct in conjuncts(of: condition) {
            switch conjunct {
            case .binary(let op, let lhs, let rhs) where op.isComparison && op != .notEqual:
                if case .path(let p) = lhs, let path = p.fieldPath, case .some(let value) = try constant(rhs) {
                    add(path, op, value)
                } else if case .path(let p) = rhs, let path = p.fieldPath, case .some(let value) = try constant(lhs) {
                    add(path, op.mirrored, value)
                }
            case .in(.path(let p), let list, negated: false):
                guard let path = p.fieldPath, case .some(let value) = try constant(list) else { continue }
                guard case .array(let items)? = value else {
                    equalities.append(Equality(path: path, values: []))
                    continue
                }
                equalities.append(Equality(path: path, values: items.filter { !$0.isNull }))
            case .between(.path(let p), let low, let high, negated: false):
                guard let path = p.fieldPath else { continue }
                if case .some(let value) = try constant(low) { add(path, .greaterOrEqual, value) }
                if case .some(let value) = try constant(high) { add(path, .lessOrEqual, value) }
            default:
                continue
            }
        }
        return (equalities, ranges)
    }
}
