import ArcusCRDT

/// Evaluates DQL expressions against one document and a set of arguments. Pure: no storage.
///
/// Results are `Value?`, where `nil` is MISSING (no such field) and `.null` is NULL (a field that
/// holds null, or an unknown result). The rules:
///
/// - **Paths** over a field that is absent, an index out of bounds, or a step into a value of
///   the wrong kind give MISSING. The document passed in is the whole document, `_id` included.
/// - **Arguments** (`:name`, `$args.name`) that are absent throw `missingArgument` with the
///   position of the reference (`DQLStatement.validate` finds them before anything runs).
/// - **Comparisons** (`= != < <= > >=`): MISSING if either side is MISSING, else NULL if either is
///   NULL. `=` and `!=` between different kinds (a string and a number) are false and true.
///   `<`, `<=`, `>`, `>=` between different kinds are NULL. Numbers compare by exact value
///   across integers and doubles. Strings compare by UTF-8 bytes (Unicode scalar order), except
///   that two ISO 8601 date/date-time strings compare as instants
///   (`'2026-03-04T11:00:00+01:00' = '2026-03-04T10:00:00Z'`). Arrays and objects are equal
///   structurally, element by element with these same rules.
/// - **Logic** has three values plus MISSING. `AND` is false if any operand is false, else
///   MISSING if any is MISSING, else NULL if any is NULL or not a boolean, else true. `OR` is
///   true if any operand is true, else MISSING, else NULL, else false. `NOT` swaps true and
///   false and keeps MISSING and NULL. A WHERE clause matches only when it is exactly true.
/// - **`IN`**: true if the list holds an equal element; otherwise NULL if the list holds a NULL,
///   else false. MISSING or NULL on the left, or a right side that is not an array, give
///   MISSING / NULL. `NOT IN` is `NOT (… IN …)`.
/// - **`LIKE`** applies to strings only (otherwise NULL); see `DQLLikePattern`.
/// - **`IS NULL`** is true for NULL, false for other values, MISSING for MISSING (and `IS NOT
///   NULL` the opposite, MISSING for MISSING). **`IS MISSING`** is always true or false.
/// - **`BETWEEN a AND b`** is `x >= a AND x <= b`.
/// - **Arithmetic** on numbers: integer results stay exact while they fit in 64 bits and become
///   doubles when they overflow; `/` of two integers is an integer when exact, else a double;
///   division or remainder by zero is NULL, and so is any non-finite result. `+` joins two
///   strings, as does `||`. Any other operand kinds give NULL; MISSING propagates first.
/// - **Functions** propagate MISSING and then NULL arguments, except `coalesce` (first value that
///   is neither) and `type` (names the kind, `'missing'` included).
/// - **Literals**: an object field whose value is MISSING is left out; an array element that is
///   MISSING becomes NULL.
public struct DQLEvaluator: Sendable {
    public var arguments: [String: Value]
    /// The conflict view of the collection the documents come from, for `conflicts(path)`;
    /// nil where there is none (observers, subscriptions), where the function throws.
    public var conflicts: ConflictView?

    public init(arguments: [String: Value] = [:], conflicts: ConflictView? = nil) {
        self.arguments = arguments
        self.conflicts = conflicts
    }

    // MARK: Entry points

    /// The value of `expression` for `document`; `nil` means MISSING.
    public func evaluate(_ expression: DQLExpression, in document: Value) throws(DQLError) -> Value? {
        try eval(expression, document)
    }

    /// Whether `document` satisfies `condition` (exactly true). No condition matches everything.
    public func matches(_ condition: DQLExpression?, document: Value) throws(DQLError) -> Bool {
        guard let condition else { return true }
        if case .bool(true)? = try eval(condition, document) { return true }
        return false
    }

    /// One result row: the whole document for `*`, else an object with one key per projection
    /// item (`DQLProjectionItem.name`), leaving out the items that are MISSING.
    public func project(_ projection: DQLProjection, document: Value) throws(DQLError) -> Value {
        guard case .items(let items) = projection else { return document }
        var row: [String: Value] = Dictionary(minimumCapacity: items.count)
        for item in items {
            if let value = try eval(item.expression, document) { row[item.name] = value }
        }
        return .object(row)
    }

    /// The ORDER BY keys of one document, evaluated once so that sorting compares them cheaply.
    public func sortKeys(_ orderBy: [DQLOrderTerm], document: Value) throws(DQLError) -> [Value?] {
        var keys: [Value?] = []
        keys.reserveCapacity(orderBy.count)
        for term in orderBy { keys.append(try eval(term.expression, document)) }
        return keys
    }

    /// Whether a row with keys `a` sorts before one with keys `b`: term by term in
    /// `DQLValueOrder`, reversed for DESC terms. Rows with equal keys are not ordered (a store
    /// that wants a stable result breaks ties itself, e.g. by `_id`).
    public static func precedes(_ a: [Value?], _ b: [Value?], orderBy: [DQLOrderTerm]) -> Bool {
        for (i, term) in orderBy.enumerated() where i < a.count && i < b.count {
            let c = DQLValueOrder.compare(a[i], b[i])
            if c != .equal { return term.descending ? c == .greater : c == .less }
        }
        return false
    }

    /// The amount of a PN_INCREMENT for `document`: it must be a number.
    public func incrementAmount(_ increment: DQLIncrement, document: Value) throws(DQLError) -> Number {
        let value = try eval(increment.amount, document)
        guard let value, let number = Number(value) else {
            let found = value.map { Self.typeName(of: $0) } ?? "missing"
            throw DQLError(.invalidArgument, "PN_INCREMENT BY needs a number, found \(found)", at: increment.position)
        }
        return number
    }

    /// Static forms of the entry points, for callers that hold no evaluator.
    public static func evaluate(_ expression: DQLExpression, in document: Value,
                                arguments: [String: Value]) throws(DQLError) -> Value? {
        try DQLEvaluator(arguments: arguments).eval(expression, document)
    }

    public static func matches(where condition: DQLExpression?, document: Value,
                               arguments: [String: Value]) throws(DQLError) -> Bool {
        try DQLEvaluator(arguments: arguments).matches(condition, document: document)
    }

    public static func project(_ projection: DQLProjection, document: Value,
                               arguments: [String: Value]) throws(DQLError) -> Value {
        try DQLEvaluator(arguments: arguments).project(projection, document: document)
    }

    /// The name `type(x)` gives a value's kind.
    public static func typeName(of value: Value?) -> String {
        guard let value else { return "missing" }
        switch value {
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double: return "number"
        case .string: return "string"
        case .binary: return "binary"
        case .array: return "array"
        case .object: return "object"
        }
    }

    // MARK: The recursion (bounded by the tree height the parser allows)

    func eval(_ e: DQLExpression, _ doc: Value) throws(DQLError) -> Value? {
        switch e {
        case .literal(let value):
            return value
        case .argument(let name, let position):
            guard let value = arguments[name] else { throw DQLError.missingArgument(name, at: position) }
            return value
        case .path(let path):
            return path.resolve(in: doc)
        case .access(let base, let steps):
            guard let value = try eval(base, doc) else { return nil }
            return DQLPath.resolve(steps, in: value)
        case .unary(.not, let operand):
            return Self.not(try eval(operand, doc))
        case .unary(.negate, let operand):
            return Self.negate(try eval(operand, doc))
        case .and(let terms):
            var sawMissing = false
            var sawNull = false
            for term in terms {
                switch try eval(term, doc) {
                case .bool(false)?: return .bool(false)
                case .bool(true)?: continue
                case nil: sawMissing = true
                default: sawNull = true
                }
            }
            return sawMissing ? nil : (sawNull ? .null : .bool(true))
        case .or(let terms):
            var sawMissing = false
            var sawNull = false
            for term in terms {
                switch try eval(term, doc) {
                case .bool(true)?: return .bool(true)
                case .bool(false)?: continue
                case nil: sawMissing = true
                default: sawNull = true
                }
            }
            return sawMissing ? nil : (sawNull ? .null : .bool(false))
        case .binary(let op, let lhs, let rhs):
            let a = try eval(lhs, doc)
            let b = try eval(rhs, doc)
            return op.isComparison ? Self.compare(op, a, b) : DQLArithmetic.apply(op, a, b)
        case .call(let function, _, let position) where function.isAggregate:
            // The parser allows aggregates only where `DQLGrouping` replaces them by their values.
            throw DQLError(.invalidStatement, "\(function.rawValue.uppercased()) is an aggregate; it has no value for one document", at: position)
        case .call(.conflicts, let arguments, let position):
            return try conflicts(arguments, doc, at: position)
        case .call(let function, let arguments, _):
            return try call(function, arguments, doc)
        case .array(let elements):
            var items: [Value] = []
            items.reserveCapacity(elements.count)
            for element in elements { items.append(try eval(element, doc) ?? .null) }
            return .array(items)
        case .object(let fields):
            var object: [String: Value] = Dictionary(minimumCapacity: fields.count)
            for field in fields {
                if let value = try eval(field.value, doc) { object[field.key] = value }
            }
            return .object(object)
        case .in(let value, let collection, let negated):
            let result = Self.isIn(try eval(value, doc), try eval(collection, doc))
            return negated ? Self.not(result) : result
        case .like(let value, let patternExpression, let compiled, let negated):
            guard let subject = try eval(value, doc) else { return nil }
            guard let patternValue = try eval(patternExpression, doc) else { return nil }
            guard case .string(let text) = subject, case .string(let patternText) = patternValue else { return .null }
            let matched = (compiled ?? DQLLikePattern(patternText)).matches(text)
            return .bool(matched != negated)
        case .isNull(let operand, let negated):
            guard let value = try eval(operand, doc) else { return nil }
            return .bool(value.isNull != negated)
        case .isMissing(let operand, let negated):
            return .bool((try eval(operand, doc) == nil) != negated)
        case .between(let operand, let low, let high, let negated):
            let value = try eval(operand, doc)
            let lower = Self.compare(.greaterOrEqual, value, try eval(low, doc))
            let upper = Self.compare(.lessOrEqual, value, try eval(high, doc))
            let both = Self.and(lower, upper)
            return negated ? Self.not(both) : both
        }
    }

    // MARK: Operators

    static func not(_ value: Value?) -> Value? {
        switch value {
        case nil: return nil
        case .bool(let b)?: return .bool(!b)
        default: return .null
        }
    }

    static func and(_ a: Value?, _ b: Value?) -> Value? {
        if case .bool(false)? = a { return .bool(false) }
        if case .bool(false)? = b { return .bool(false) }
        if a == nil || b == nil { return nil }
        if case .bool(true)? = a, case .bool(true)? = b { return .bool(true) }
        return .null
    }

    static func negate(_ value: Value?) -> Value? {
        switch value {
        case nil: return nil
        case .int(let i)?: return i == .min ? .double(-Double(i)) : .int(-i)
        case .double(let d)?: return .double(-d)
        default: return .null
        }
    }

    static func compare(_ op: DQLBinaryOperator, _ a: Value?, _ b: Value?) -> Value? {
        guard let a, let b else { return nil }
        if a.isNull || b.isNull { return .null }
        switch op {
        case .equal: return .bool(DQLValues.equal(a, b))
        case .notEqual: return .bool(!DQLValues.equal(a, b))
        default:
            guard let c = DQLValues.compareForOperator(a, b) else { return .null }
            switch op {
            case .less: return .bool(c == .less)
            case .lessOrEqual: return .bool(c != .greater)
            case .greater: return .bool(c == .greater)
            default: return .bool(c != .less)
            }
        }
    }

    static func isIn(_ value: Value?, _ collection: Value?) -> Value? {
        guard let value, let collection else { return nil }
        if value.isNull { return .null }
        guard case .array(let items) = collection else { return .null }
        var sawNull = false
        for item in items {
            if item.isNull {
                sawNull = true
            } else if DQLValues.equal(value, item) {
                return .bool(true)
            }
        }
        return sawNull ? .null : .bool(false)
    }
}
