import ArcusCRDT

/// An expression with the height of its tree, so the parser can bound the height as it builds
/// (a left-leaning chain `a + b + c …` is built by a loop, not by recursion).
struct DQLParsed {
    var expr: DQLExpression
    var height: Int
}

/// The expression grammar, loosest binding first:
///
///     OR  <  AND (or &&)  <  NOT  <  comparison  <  + - ||  <  * / %  <  unary -  <  postfix
///
/// Comparisons (`= == != <> < <= > >=`, `[NOT] IN`, `[NOT] LIKE`, `[NOT] BETWEEN … AND …`,
/// `IS [NOT] NULL`, `IS [NOT] MISSING`) do not chain: `a = b = c` is an error.
extension DQLParserState {
    mutating func expression() throws(DQLError) -> DQLParsed {
        try disjunction()
    }

    /// A node over `children`, refused when the tree would grow higher than allowed.
    private func node(_ expr: DQLExpression, _ children: [DQLParsed], at position: DQLSourcePosition) throws(DQLError) -> DQLParsed {
        var height = 0
        for child in children { height = max(height, child.height) }
        height += 1
        guard height <= DQLParser.maximumExpressionHeight else {
            throw DQLError(.nestingTooDeep, "the expression is more than \(DQLParser.maximumExpressionHeight) operators deep", at: position)
        }
        return DQLParsed(expr: expr, height: height)
    }

    private mutating func disjunction() throws(DQLError) -> DQLParsed {
        let start = current.position
        let first = try conjunction()
        guard at(.or) else { return first }
        var terms: [DQLParsed] = [first]
        while at(.or) {
            advance()
            terms.append(try conjunction())
        }
        var flat: [DQLExpression] = []
        for term in terms {
            if case .or(let inner) = term.expr { flat += inner } else { flat.append(term.expr) }
        }
        return try node(.or(flat), terms, at: start)
    }

    private mutating func conjunction() throws(DQLError) -> DQLParsed {
        let start = current.position
        let first = try negation()
        guard at(.and) || at(.ampersands) else { return first }
        var terms: [DQLParsed] = [first]
        while at(.and) || at(.ampersands) {
            advance()
            terms.append(try negation())
        }
        var flat: [DQLExpression] = []
        for term in terms {
            if case .and(let inner) = term.expr { flat += inner } else { flat.append(term.expr) }
        }
        return try node(.and(flat), terms, at: start)
    }

    private mutating func negation() throws(DQLError) -> DQLParsed {
        guard at(.not) else { return try comparison() }
        let position = current.position
        advance()
        try nest()
        defer { depth -= 1 }
        let operand = try negation()
        return try node(.unary(.not, operand.expr), [operand], at: position)
    }

    private func comparisonOperator() -> DQLBinaryOperator? {
        guard case .symbol(let symbol) = current.kind else { return nil }
        switch symbol {
        case .equal, .doubleEqual: return .equal
        case .notEqual, .lessGreater: return .notEqual
        case .less: return .less
        case .lessEqual: return .lessOrEqual
        case .greater: return .greater
        case .greaterEqual: return .greaterOrEqual
        default: return nil
        }
    }

    /// Whether a comparison starts at the cursor (used to refuse chains).
    private func atComparison() -> Bool {
        if comparisonOperator() != nil || at(.is) || at(.in) || at(.like) || at(.between) { return true }
        guard at(.not) else { return false }
        let next = peek(1).keyword
        return next == .in || next == .like || next == .between
    }

    private mutating func comparison() throws(DQLError) -> DQLParsed {
        let left = try additive()
        guard atComparison() else { return left }
        let position = current.position
        let result: DQLParsed
        if let op = comparisonOperator() {
            advance()
            let right = try additive()
            result = try node(.binary(op, left.expr, right.expr), [left, right], at: position)
        } else if accept(.is) {
            let negated = accept(.not)
            if accept(.null) {
                result = try node(.isNull(left.expr, negated: negated), [left], at: position)
            } else if accept(.missing) {
                result = try node(.isMissing(left.expr, negated: negated), [left], at: position)
            } else {
                throw fail(negated ? "NULL or MISSING after IS NOT" : "NULL, MISSING or NOT after IS")
            }
        } else {
            let negated = accept(.not)
            if accept(.in) {
                let list = at(.leftParen) ? try parenthesisedInList() : try additive()
                result = try node(.in(left.expr, list.expr, negated: negated), [left, list], at: position)
            } else if accept(.like) {
                let pattern = try additive()
                var compiled: DQLLikePattern?
                if case .literal(.string(let text)) = pattern.expr { compiled = DQLLikePattern(text) }
                result = try node(.like(left.expr, pattern: pattern.expr, compiled: compiled, negated: negated), [left, pattern], at: position)
            } else {
                try expect(.between, "after NOT")
                let low = try additive()
                try expect(.and, "between the bounds of BETWEEN")
                let high = try additive()
                result = try node(.between(left.expr, low: low.expr, high: high.expr, negated: negated), [left, low, high], at: position)
            }
        }
        if atComparison() {
            throw DQLError(.syntax, "comparisons cannot be chained; join them with AND or OR (found \(current.quoted))", at: current.position)
        }
        return result
    }

    /// SQL's `IN (a, b, …)`: a list of values, the same as `IN [a, b, …]`. A lone parenthesised
    /// element is a one-element list as in SQL (`make IN ('ford')` is `make IN ['ford']`), so an
    /// array argument is written `IN :list`, without parentheses. Forms that SQL reads
    /// differently from DQL are refused rather than given a meaning that finds nothing.
    private mutating func parenthesisedInList() throws(DQLError) -> DQLParsed {
        let open = current.position
        advance()
        try nest()
        defer { depth -= 1 }
        if at(.rightParen) {
            throw DQLError(.syntax, "IN () needs at least one value; write IN [] for an empty list", at: current.position)
        }
        if at(.select) {
            throw DQLError(.syntax, "subqueries are not supported; list the values: IN ('a', 'b') or IN :list", at: current.position)
        }
        var elements: [DQLParsed] = []
        repeat { elements.append(try expression()) } while accept(.comma)
        try expect(.rightParen, "or ',' in the IN list that starts at \(open)")
        if elements.count == 1 {
            switch elements[0].expr {
            case .array, .literal(.array):
                throw DQLError(.syntax, "IN ([…]) would look for the array itself; write IN [a, b] or IN (a, b)", at: open)
            default:
                break
            }
        }
        var values: [Value] = []
        for element in elements {
            guard case .literal(let value) = element.expr else {
                return try node(.array(elements.map(\.expr)), elements, at: open)
            }
            values.append(value)
        }
        return DQLParsed(expr: .literal(.array(values)), height: 0)
    }

    private static let additiveOperators: [DQLSymbol: DQLBinaryOperator] = [.plus: .add, .minus: .subtract, .concatenate: .concatenate]
    private static let multiplicativeOperators: [DQLSymbol: DQLBinaryOperator] = [.star: .multiply, .slash: .divide, .percent: .remainder]

    private mutating func additive() throws(DQLError) -> DQLParsed {
        try leftAssociative(Self.additiveOperators) { parser throws(DQLError) in try parser.multiplicative() }
    }

    private mutating func multiplicative() throws(DQLError) -> DQLParsed {
        try leftAssociative(Self.multiplicativeOperators) { parser throws(DQLError) in try parser.unary() }
    }

    /// One level of binary operators that group to the left (`a - b - c` is `(a - b) - c`):
    /// operands parsed by `operand`, the next level up, joined by any of `operators`.
    private mutating func leftAssociative(_ operators: [DQLSymbol: DQLBinaryOperator],
                                          operand: (inout Self) throws(DQLError) -> DQLParsed) throws(DQLError) -> DQLParsed {
        var left = try operand(&self)
        while case .symbol(let symbol) = current.kind, let op = operators[symbol] {
            let position = current.position
            advance()
            let right = try operand(&self)
            left = try node(.binary(op, left.expr, right.expr), [left, right], at: position)
        }
        return left
    }

    private mutating func unary() throws(DQLError) -> DQLParsed {
        guard at(.minus) || at(.plus) else { return try postfix() }
        let position = current.position
        let negative = at(.minus)
        advance()
        // A sign directly before a number is part of the literal, so -9223372036854775808 is
        // exact and `- 5` prints back as `-5`.
        switch current.kind {
        case .integer(let magnitude):
            let token = current
            advance()
            if negative, magnitude == UInt64(Int64.max) + 1 { return DQLParsed(expr: .literal(.int(.min)), height: 0) }
            guard magnitude <= UInt64(Int64.max) else { throw Self.tooLarge(magnitude, token) }
            let value = Int64(magnitude)
            return DQLParsed(expr: .literal(.int(negative ? -value : value)), height: 0)
        case .decimal(let value):
            advance()
            return DQLParsed(expr: .literal(.double(negative ? -value : value)), height: 0)
        default:
            guard negative else { throw fail("a number after unary '+'") }
        }
        try nest()
        defer { depth -= 1 }
        let operand = try unary()
        // A number reached through another sign or parentheses (`- +5`, `-(5)`) folds too, so that
        // the negation prints as the literal it is and reads back the same.
        switch operand.expr {
        case .literal(.int(let value)) where value != .min: return DQLParsed(expr: .literal(.int(-value)), height: 0)
        case .literal(.double(let value)): return DQLParsed(expr: .literal(.double(-value)), height: 0)
        default: return try node(.unary(.negate, operand.expr), [operand], at: position)
        }
    }

    private static func tooLarge(_ magnitude: UInt64, _ token: DQLToken) -> DQLError {
        DQLError(.invalidNumber, "integer \(magnitude) does not fit in 64 bits; write it with a decimal point for a floating-point number", at: token.position)
    }

    private mutating func postfix() throws(DQLError) -> DQLParsed {
        let base = try primary()
        guard at(.dot) || at(.leftBracket) else { return base }
        let position = current.position
        let steps = try pathSteps()
        if case .path(let path) = base.expr {
            return DQLParsed(expr: .path(DQLPath(path.steps + steps)), height: 0)
        }
        if case .access(let inner, let previous) = base.expr {
            return DQLParsed(expr: .access(inner, previous + steps), height: base.height)
        }
        return try node(.access(base.expr, steps), [base], at: position)
    }

    /// `.name`, `` .`name` ``, `['name']`, `[n]` steps, as many as follow.
    mutating func pathSteps() throws(DQLError) -> [DQLPathStep] {
        var steps: [DQLPathStep] = []
        while true {
            if accept(.dot) {
                steps.append(.field(try anyName("a field name after '.'")))
            } else if accept(.leftBracket) {
                switch current.kind {
                case .string(let key): steps.append(.field(key))
                case .integer(let n) where n <= UInt64(Int.max): steps.append(.index(Int(n)))
                default: throw fail("an array index (a non-negative integer) or a quoted field name inside [ ]")
                }
                advance()
                try expect(.rightBracket, "after the index")
            } else {
                return steps
            }
        }
    }

    mutating func primary() throws(DQLError) -> DQLParsed {
        let token = current
        switch token.kind {
        case .integer(let magnitude):
            advance()
            guard magnitude <= UInt64(Int64.max) else { throw Self.tooLarge(magnitude, token) }
            return DQLParsed(expr: .literal(.int(Int64(magnitude))), height: 0)
        case .decimal(let value):
            advance()
            return DQLParsed(expr: .literal(.double(value)), height: 0)
        case .string(let text):
            advance()
            return DQLParsed(expr: .literal(.string(text)), height: 0)
        case .doubleQuotedString:
            throw DQLError(.syntax, "double-quoted text is not a string in DQL: write 'text' for a string or `text` for a field name", at: token.position)
        case .parameter(let name):
            advance()
            return DQLParsed(expr: .argument(name: name, position: token.position), height: 0)
        case .variable(let name):
            guard name == "args" else {
                throw DQLError(.syntax, "unknown variable $\(name); arguments are written $args.name or :name", at: token.position)
            }
            advance()
            let argument: String
            if accept(.dot) {
                argument = try anyName("an argument name after '$args.'")
            } else if accept(.leftBracket), case .string(let key) = current.kind {
                advance()
                try expect(.rightBracket, "after the argument name")
                argument = key
            } else {
                throw fail("'.name' after $args")
            }
            return DQLParsed(expr: .argument(name: argument, position: token.position), height: 0)
        case .symbol(.leftParen):
            advance()
            try nest()
            defer { depth -= 1 }
            let inner = try expression()
            try expect(.rightParen, "to close the '(' at \(token.position)")
            return inner
        case .symbol(.leftBracket):
            return try arrayLiteral()
        case .symbol(.leftBrace):
            return try objectLiteral()
        case .identifier(let name):
            switch token.keyword {
            case .true?: advance(); return DQLParsed(expr: .literal(.bool(true)), height: 0)
            case .false?: advance(); return DQLParsed(expr: .literal(.bool(false)), height: 0)
            case .null?: advance(); return DQLParsed(expr: .literal(.null), height: 0)
            default: break
            }
            if peek(1).kind == .symbol(.leftParen) { return try call(name, token) }
            if token.keyword?.isReserved == true {
                throw DQLError(.syntax, "expected an expression, found keyword \(token.quoted) (write `\(name)` in backquotes to use it as a field name)", at: token.position)
            }
            return try path(name, token)
        case .quotedIdentifier(let name):
            return try path(name, token)
        default:
            throw fail("an expression")
        }
    }

    private mutating func path(_ first: String, _ token: DQLToken) throws(DQLError) -> DQLParsed {
        guard allowsPaths else {
            throw DQLError(.syntax, "a document cannot refer to a field ('\(first)') while it is inserted; write arguments as :name", at: token.position)
        }
        advance()
        return DQLParsed(expr: .path(DQLPath([.field(first)] + (try pathSteps()))), height: 0)
    }

    private mutating func call(_ name: String, _ token: DQLToken) throws(DQLError) -> DQLParsed {
        guard let function = DQLFunction(name: name) else {
            let known = DQLFunction.allCases.map(\.rawValue).joined(separator: ", ")
            throw DQLError(.unknownFunction, "unknown function '\(name)'; the functions are \(known)", at: token.position)
        }
        if function.isAggregate { return try aggregate(function, name, token) }
        advance()
        advance()  // (
        try nest()
        defer { depth -= 1 }
        var arguments: [DQLParsed] = []
        if !accept(.rightParen) {
            repeat { arguments.append(try expression()) } while accept(.comma)
            try expect(.rightParen, "or ',' after an argument of \(name)")
        }
        guard function.arity.contains(arguments.count) else {
            let arity = function.arity
            let wanted = arity.upperBound == Int.max ? "at least \(arity.lowerBound)"
                : arity.lowerBound == arity.upperBound ? "\(arity.lowerBound)" : "\(arity.lowerBound) to \(arity.upperBound)"
            let plural = arity.upperBound == 1 ? "argument" : "arguments"
            throw DQLError(.wrongArity, "\(name) takes \(wanted) \(plural), not \(arguments.count)", at: token.position)
        }
        if function == .conflicts {
            guard case .path(let path) = arguments[0].expr, path.fieldPath != nil else {
                throw DQLError(.invalidArgument, "conflicts takes a field path, such as conflicts(color) or conflicts(owner.name), not \(arguments[0].expr)", at: token.position)
            }
        }
        return try node(.call(function, arguments.map(\.expr), position: token.position), arguments, at: token.position)
    }

    /// `COUNT(*)`, `COUNT(x)`, `SUM(x)`, `AVG(x)`, `MIN(x)`, `MAX(x)`: only where the statement
    /// has groups to fold (`aggregateBan` is nil), and never one inside another.
    private mutating func aggregate(_ function: DQLFunction, _ name: String, _ token: DQLToken) throws(DQLError) -> DQLParsed {
        let upper = name.uppercased()
        if let ban = aggregateBan {
            throw DQLError(.invalidStatement, "\(upper) is an aggregate: \(ban)", at: token.position)
        }
        advance()
        advance()  // (
        try nest()
        defer { depth -= 1 }
        if at(.distinct) {
            throw DQLError(.syntax, "\(upper)(DISTINCT …) is not supported yet; use SELECT DISTINCT or GROUP BY", at: current.position)
        }
        if function == .count, at(.star), peek(1).kind == .symbol(.rightParen) {
            advance()
            advance()
            return DQLParsed(expr: .call(.count, [], position: token.position), height: 1)
        }
        if at(.rightParen) {
            let fix = function == .count ? "COUNT(*) counts documents, COUNT(field) the ones where field is neither missing nor null" : "\(upper)(field)"
            throw DQLError(.wrongArity, "\(upper) takes one argument: \(fix)", at: token.position)
        }
        aggregateBan = "aggregates cannot be nested"
        defer { aggregateBan = nil }
        let argument = try expression()
        if at(.comma) {
            throw DQLError(.wrongArity, "\(upper) takes one argument", at: current.position)
        }
        try expect(.rightParen, "after the argument of \(upper)")
        return try node(.call(function, [argument.expr], position: token.position), [argument], at: token.position)
    }

    /// `[a, b, …]`; folded to one literal value when every element is a literal.
    private mutating func arrayLiteral() throws(DQLError) -> DQLParsed {
        let open = current.position
        advance()
        try nest()
        defer { depth -= 1 }
        var elements: [DQLParsed] = []
        if !accept(.rightBracket) {
            repeat { elements.append(try expression()) } while accept(.comma)
            try expect(.rightBracket, "or ',' in the array that starts at \(open)")
        }
        var values: [Value] = []
        for element in elements {
            guard case .literal(let value) = element.expr else {
                return try node(.array(elements.map(\.expr)), elements, at: open)
            }
            values.append(value)
        }
        return DQLParsed(expr: .literal(.array(values)), height: 0)
    }

    /// `{key: value, …}` with keys as 'strings', "strings", names or `names`; folded to one
    /// literal value when every value is a literal.
    private mutating func objectLiteral() throws(DQLError) -> DQLParsed {
        let open = current.position
        advance()
        try nest()
        defer { depth -= 1 }
        var fields: [DQLObjectField] = []
        var children: [DQLParsed] = []
        var seen: Set<String> = []
        if !accept(.rightBrace) {
            repeat {
                let keyToken = current
                let key: String
                switch keyToken.kind {
                case .string(let k), .doubleQuotedString(let k), .identifier(let k), .quotedIdentifier(let k): key = k
                default: throw fail("a key (a quoted string) in the object that starts at \(open)")
                }
                advance()
                guard seen.insert(key).inserted else {
                    throw DQLError(.syntax, "the key '\(key)' appears twice in the object", at: keyToken.position)
                }
                if case .parameter(let name) = current.kind {
                    // `{'a':b}` lexes as key, argument `:b`; in an object it means key, ':', b.
                    let at = current.position
                    tokens[index] = DQLToken(kind: .identifier(name),
                                             position: DQLSourcePosition(offset: at.offset + 1, line: at.line, column: at.column + 1),
                                             keyword: DQLKeyword.lookup(ArraySlice(name.utf8)))
                } else {
                    try expect(.colon, "after the key '\(key)'")
                }
                let value = try expression()
                fields.append(DQLObjectField(key: key, value: value.expr))
                children.append(value)
            } while accept(.comma)
            try expect(.rightBrace, "or ',' in the object that starts at \(open)")
        }
        var object: [String: Value] = [:]
        for field in fields {
            guard case .literal(let value) = field.value else {
                return try node(.object(fields), children, at: open)
            }
            object[field.key] = value
        }
        return DQLParsed(expr: .literal(.object(object)), height: 0)
    }
}
