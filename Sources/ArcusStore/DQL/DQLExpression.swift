import ArcusCRDT

/// A DQL expression, as the parser builds it.
///
/// The tree is never deeper than `DQLParser.maximumExpressionHeight`, so walking it recursively
/// is safe. `AND` and `OR` chains are flat lists (their conjuncts are what a planner looks at).
/// Nodes that can fail at evaluation (arguments) or that name a function keep their source
/// position. `description` prints fully parenthesised DQL that parses back to the same tree.
public indirect enum DQLExpression: Sendable, Hashable {
    case literal(Value)
    /// `:name` or `$args.name`: the named entry of the arguments object.
    case argument(name: String, position: DQLSourcePosition)
    /// A path from the document root.
    case path(DQLPath)
    /// Steps into a computed value: `(:doc).a`, `$args.point.x`, `{'a': 1}.a`.
    case access(DQLExpression, [DQLPathStep])
    case unary(DQLUnaryOperator, DQLExpression)
    case binary(DQLBinaryOperator, DQLExpression, DQLExpression)
    /// Two or more conjuncts.
    case and([DQLExpression])
    /// Two or more disjuncts.
    case or([DQLExpression])
    case call(DQLFunction, [DQLExpression], position: DQLSourcePosition)
    case array([DQLExpression])
    /// An object literal; keys are unique and kept in source order.
    case object([DQLObjectField])
    /// `value [NOT] IN collection`.
    case `in`(DQLExpression, DQLExpression, negated: Bool)
    /// `value [NOT] LIKE pattern`; `compiled` is set when the pattern is a string literal.
    case like(DQLExpression, pattern: DQLExpression, compiled: DQLLikePattern?, negated: Bool)
    case isNull(DQLExpression, negated: Bool)
    case isMissing(DQLExpression, negated: Bool)
    /// `value [NOT] BETWEEN low AND high`, both ends inclusive.
    case between(DQLExpression, low: DQLExpression, high: DQLExpression, negated: Bool)
}

public struct DQLObjectField: Sendable, Hashable {
    public var key: String
    public var value: DQLExpression

    public init(key: String, value: DQLExpression) {
        self.key = key
        self.value = value
    }
}

public enum DQLUnaryOperator: String, Sendable, Hashable {
    case not = "NOT"
    case negate = "-"
}

public enum DQLBinaryOperator: String, Sendable, Hashable, CaseIterable {
    case equal = "="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case add = "+"
    case subtract = "-"
    case multiply = "*"
    case divide = "/"
    case remainder = "%"
    case concatenate = "||"

    public var isComparison: Bool {
        switch self {
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual: return true
        default: return false
        }
    }

    /// The comparison that holds with the operands swapped (`a < b` is `b > a`).
    public var mirrored: DQLBinaryOperator {
        switch self {
        case .less: return .greater
        case .lessOrEqual: return .greaterOrEqual
        case .greater: return .less
        case .greaterOrEqual: return .lessOrEqual
        default: return self
        }
    }
}

/// The built-in functions. Names are matched in any letter case; some have aliases.
public enum DQLFunction: String, Sendable, Hashable, CaseIterable {
    case length, lower, upper, contains
    case startsWith = "starts_with"
    case endsWith = "ends_with"
    case coalesce
    case arrayContains = "array_contains"
    case type
    /// `conflicts(path)`: the concurrent values that lost the field's latest last-writer-wins
    /// merge here (the conflict view, `FieldConflicts`); its argument is a field path.
    case conflicts
    /// Aggregates: over the documents of a group, not one document. `count` with no argument is
    /// `COUNT(*)`.
    case count, sum, avg, min, max

    /// The function a name in a call denotes (`char_length` is `length`, `startswith` is
    /// `starts_with`, …).
    public init?(name: String) {
        switch name.lowercased() {
        case "length", "char_length", "character_length": self = .length
        case "lower": self = .lower
        case "upper": self = .upper
        case "contains": self = .contains
        case "starts_with", "startswith": self = .startsWith
        case "ends_with", "endswith": self = .endsWith
        case "coalesce": self = .coalesce
        case "array_contains": self = .arrayContains
        case "type", "typeof": self = .type
        case "conflicts": self = .conflicts
        case "count": self = .count
        case "sum": self = .sum
        case "avg": self = .avg
        case "min": self = .min
        case "max": self = .max
        default: return nil
        }
    }

    /// How many arguments a call takes: at least `lowerBound`, at most `upperBound`.
    public var arity: ClosedRange<Int> {
        switch self {
        case .length, .lower, .upper, .type, .conflicts: return 1...1
        case .contains, .startsWith, .endsWith, .arrayContains: return 2...2
        case .coalesce: return 1...Int.max
        case .count: return 0...1
        case .sum, .avg, .min, .max: return 1...1
        }
    }

    /// Whether the function folds the documents of a group into one value.
    public var isAggregate: Bool {
        switch self {
        case .count, .sum, .avg, .min, .max: return true
        default: return false
        }
    }
}

/// A use of an argument in a statement, for checking the arguments before executing anything.
public struct DQLArgumentReference: Sendable, Hashable {
    public var name: String
    public var position: DQLSourcePosition

    public init(name: String, position: DQLSourcePosition) {
        self.name = name
        self.position = position
    }
}

extension DQLExpression {
    /// Whether the value is the same for every document: no path into the document appears.
    public var isConstant: Bool {
        var constant = true
        visit { node in
            if case .path = node { constant = false }
            return constant
        }
        return constant
    }

    /// Every argument this expression references, in source order.
    public var referencedArguments: [DQLArgumentReference] {
        var found: [DQLArgumentReference] = []
        collectArguments(into: &found)
        return found
    }

    func collectArguments(into found: inout [DQLArgumentReference]) {
        visit { node in
            if case .argument(let name, let position) = node {
                found.append(DQLArgumentReference(name: name, position: position))
            }
            return true
        }
    }

    /// Calls `body` on this node and then on its children in source order, while `body` returns
    /// true. The recursion is bounded by the tree height the parser allows.
    func visit(_ body: (DQLExpression) -> Bool) {
        _ = visitNodes(body)
    }

    private func visitNodes(_ body: (DQLExpression) -> Bool) -> Bool {
        guard body(self) else { return false }
        for child in children where !child.visitNodes(body) { return false }
        return true
    }

    /// Whether an aggregate call (COUNT, SUM, …) appears anywhere in the expression.
    public var containsAggregate: Bool {
        var found = false
        visit { node in
            if case .call(let function, _, _) = node, function.isAggregate { found = true }
            return !found
        }
        return found
    }

    /// This node with its direct subexpressions replaced by `c`, which holds as many
    /// expressions as `children`, in the same order.
    func withChildren(_ c: [DQLExpression]) -> DQLExpression {
        switch self {
        case .literal, .argument, .path: return self
        case .access(_, let steps): return .access(c[0], steps)
        case .unary(let op, _): return .unary(op, c[0])
        case .binary(let op, _, _): return .binary(op, c[0], c[1])
        case .and: return .and(c)
        case .or: return .or(c)
        case .array: return .array(c)
        case .call(let function, _, let position): return .call(function, c, position: position)
        case .object(let fields): return .object(zip(fields, c).map { DQLObjectField(key: $0.key, value: $1) })
        case .in(_, _, let negated): return .in(c[0], c[1], negated: negated)
        case .like(_, _, let compiled, let negated):
            // A pattern that is no longer the literal it was compiled from cannot keep the compiled form.
            let keep: DQLLikePattern? = if case .literal(.string) = c[1] { compiled } else { nil }
            return .like(c[0], pattern: c[1], compiled: keep, negated: negated)
        case .isNull(_, let negated): return .isNull(c[0], negated: negated)
        case .isMissing(_, let negated): return .isMissing(c[0], negated: negated)
        case .between(_, _, _, let negated): return .between(c[0], low: c[1], high: c[2], negated: negated)
        }
    }

    /// The direct subexpressions, in source order.
    public var children: [DQLExpression] {
        switch self {
        case .literal, .argument, .path: return []
        case .access(let base, _): return [base]
        case .unary(_, let operand): return [operand]
        case .binary(_, let lhs, let rhs): return [lhs, rhs]
        case .and(let terms), .or(let terms), .array(let terms): return terms
        case .call(_, let arguments, _): return arguments
        case .object(let fields): return fields.map(\.value)
        case .in(let value, let collection, _): return [value, collection]
        case .like(let value, let pattern, _, _): return [value, pattern]
        case .isNull(let value, _), .isMissing(let value, _): return [value]
        case .between(let value, let low, let high, _): return [value, low, high]
        }
    }
}
