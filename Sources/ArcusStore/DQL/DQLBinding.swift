import ArcusCRDT

extension DQLExpression {
    /// This expression with every argument replaced by its value, so that evaluating it per
    /// document does no argument lookups: array and object literals whose elements all became
    /// literals are folded into one value, and a LIKE pattern that became a string is compiled.
    /// Throws `missingArgument` (with the position of the reference) for an absent argument.
    public func binding(_ arguments: [String: Value]) throws(DQLError) -> DQLExpression {
        switch self {
        case .literal, .path:
            return self
        case .argument(let name, let position):
            guard let value = arguments[name] else { throw DQLError.missingArgument(name, at: position) }
            return .literal(value)
        case .access(let base, let steps):
            return .access(try base.binding(arguments), steps)
        case .unary(let op, let operand):
            return .unary(op, try operand.binding(arguments))
        case .binary(let op, let lhs, let rhs):
            return .binary(op, try lhs.binding(arguments), try rhs.binding(arguments))
        case .and(let terms):
            return .and(try Self.binding(terms, arguments))
        case .or(let terms):
            return .or(try Self.binding(terms, arguments))
        case .call(let function, let callArguments, let position):
            return .call(function, try Self.binding(callArguments, arguments), position: position)
        case .array(let elements):
            let bound = try Self.binding(elements, arguments)
            var values: [Value] = []
            values.reserveCapacity(bound.count)
            for element in bound {
                guard case .literal(let value) = element else { return .array(bound) }
                values.append(value)
            }
            return .literal(.array(values))
        case .object(let fields):
            var bound: [DQLObjectField] = []
            bound.reserveCapacity(fields.count)
            for field in fields { bound.append(DQLObjectField(key: field.key, value: try field.value.binding(arguments))) }
            var object: [String: Value] = Dictionary(minimumCapacity: bound.count)
            for field in bound {
                guard case .literal(let value) = field.value else { return .object(bound) }
                object[field.key] = value
            }
            return .literal(.object(object))
        case .in(let value, let collection, let negated):
            return .in(try value.binding(arguments), try collection.binding(arguments), negated: negated)
        case .like(let value, let pattern, let compiled, let negated):
            let boundPattern = try pattern.binding(arguments)
            var compiledPattern = compiled
            if compiledPattern == nil, case .literal(.string(let text)) = boundPattern { compiledPattern = DQLLikePattern(text) }
            return .like(try value.binding(arguments), pattern: boundPattern, compiled: compiledPattern, negated: negated)
        case .isNull(let value, let negated):
            return .isNull(try value.binding(arguments), negated: negated)
        case .isMissing(let value, let negated):
            return .isMissing(try value.binding(arguments), negated: negated)
        case .between(let value, let low, let high, let negated):
            return .between(try value.binding(arguments), low: try low.binding(arguments), high: try high.binding(arguments), negated: negated)
        }
    }

    private static func binding(_ expressions: [DQLExpression], _ arguments: [String: Value]) throws(DQLError) -> [DQLExpression] {
        var bound: [DQLExpression] = []
        bound.reserveCapacity(expressions.count)
        for expression in expressions { bound.append(try expression.binding(arguments)) }
        return bound
    }
}

extension DQLStatement {
    /// Validates the arguments (see `validate(arguments:)`) and returns the statement with every
    /// argument replaced by its value, LIMIT and OFFSET included. The result references no
    /// argument, so it evaluates with an empty arguments object, faster and without failing on
    /// arguments. A store calls this once per execution, before touching any document.
    public func binding(_ arguments: [String: Value]) throws(DQLError) -> DQLStatement {
        try validate(arguments: arguments)
        func bind(_ e: DQLExpression?) throws(DQLError) -> DQLExpression? { try e?.binding(arguments) }
        func bind(_ c: DQLCount?) throws(DQLError) -> DQLCount? {
            guard let c else { return nil }
            return .literal(Int64(try c.resolve(arguments: arguments)))
        }
        switch self {
        case .select(var s):
            if case .items(let items) = s.projection {
                var bound: [DQLProjectionItem] = []
                for item in items {
                    bound.append(DQLProjectionItem(expression: try item.expression.binding(arguments), alias: item.alias, name: item.name))
                }
                s.projection = .items(bound)
            }
            s.whereClause = try bind(s.whereClause)
            for i in s.groupBy.indices { s.groupBy[i] = try s.groupBy[i].binding(arguments) }
            s.having = try bind(s.having)
            for i in s.orderBy.indices { s.orderBy[i].expression = try s.orderBy[i].expression.binding(arguments) }
            s.limit = try bind(s.limit)
            s.offset = try bind(s.offset)
            return .select(s)
        case .insert(var s):
            for i in s.documents.indices { s.documents[i].expression = try s.documents[i].expression.binding(arguments) }
            return .insert(s)
        case .update(var s):
            for i in s.assignments.indices { s.assignments[i].value = try s.assignments[i].value.binding(arguments) }
            s.whereClause = try bind(s.whereClause)
            return .update(s)
        case .updateCounter(var s):
            for i in s.increments.indices { s.increments[i].amount = try s.increments[i].amount.binding(arguments) }
            s.whereClause = try bind(s.whereClause)
            return .updateCounter(s)
        case .delete(var s):
            s.whereClause = try bind(s.whereClause)
            return .delete(s)
        case .evict(var s):
            s.whereClause = try bind(s.whereClause)
            return .evict(s)
        case .createIndex, .dropIndex, .settings:
            return self
        case .explain(let s):
            return .explain(try s.binding(arguments))
        case .profile(let s):
            guard case .select(let bound) = try DQLStatement.select(s).binding(arguments) else { return self }
            return .profile(bound)
        }
    }
}
