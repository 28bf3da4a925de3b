import ArcusCRDT

/// Parses DQL text into statements and expressions.
///
/// Keywords are matched in any letter case; names are case-sensitive and may be backquoted
/// (`` `weird name` ``). One statement per text, with an optional trailing `;`. Every error is a
/// `DQLError` naming the line and column of the offending token and what was expected there.
/// Hostile input cannot exhaust the stack: parentheses, literals, unary operators and calls nest
/// at most `maximumNestingDepth` deep, and expression trees are at most
/// `maximumExpressionHeight` high (long `AND`/`OR` chains are flat and do not count).
public enum DQLParser {
    /// How deep parentheses, array and object literals, calls and unary operators may nest.
    public static let maximumNestingDepth = Value.maximumNestingDepth
    /// How high an expression tree may be (a chain `a + b + c` is as high as it is long).
    public static let maximumExpressionHeight = 256

    /// Parses one statement.
    public static func parse(_ text: String) throws(DQLError) -> DQLStatement {
        var parser = try DQLParserState(text)
        return try parser.statement()
    }

    /// Parses a lone expression, as the builder API's `find("color == $args.color")` needs.
    public static func parseExpression(_ text: String) throws(DQLError) -> DQLExpression {
        var parser = try DQLParserState(text)
        let parsed = try parser.expression()
        if parser.current.kind != .end {
            throw parser.fail("an operator or the end of the expression")
        }
        return parsed.expr
    }
}

/// The parser's cursor over the tokens. The last token is always `.end` and the cursor never
/// moves past it, so `current` and `peek` cannot go out of bounds.
struct DQLParserState {
    var tokens: [DQLToken]
    var index = 0
    /// Current nesting of parentheses, literals, calls and unary operators.
    var depth = 0
    /// False inside INSERT documents, where there is no document for a path to read.
    var allowsPaths = true
    /// What may follow the part of the statement read so far, for the trailing-token error.
    var expectedNext = "the end of the statement"
    /// Why an aggregate call cannot stand here, or nil where it can (a SELECT's projection,
    /// HAVING and ORDER BY).
    var aggregateBan: String? = DQLParserState.aggregatesOutsideSelect

    init(_ text: String) throws(DQLError) {
        tokens = try DQLLexer.tokenize(text)
    }

    var current: DQLToken { tokens[index] }

    func peek(_ ahead: Int) -> DQLToken { tokens[min(index + ahead, tokens.count - 1)] }

    mutating func advance() {
        if index < tokens.count - 1 { index += 1 }
    }

    func at(_ keyword: DQLKeyword) -> Bool { current.keyword == keyword }

    func at(_ symbol: DQLSymbol) -> Bool { current.kind == .symbol(symbol) }

    mutating func accept(_ keyword: DQLKeyword) -> Bool {
        guard at(keyword) else { return false }
        advance()
        return true
    }

    mutating func accept(_ symbol: DQLSymbol) -> Bool {
        guard at(symbol) else { return false }
        advance()
        return true
    }

    mutating func expect(_ keyword: DQLKeyword, _ context: String) throws(DQLError) {
        guard accept(keyword) else { throw fail("\(keyword.rawValue) \(context)") }
    }

    mutating func expect(_ symbol: DQLSymbol, _ context: String) throws(DQLError) {
        guard accept(symbol) else { throw fail("'\(symbol.rawValue)' \(context)") }
    }

    /// `expected <what>, found <current token>`, at the current token.
    func fail(_ expected: String) -> DQLError {
        DQLError(.syntax, "expected \(expected), found \(current.quoted)", at: current.position)
    }

    /// Enters one level of nesting; the caller leaves it with `depth -= 1` (in a `defer`).
    mutating func nest() throws(DQLError) {
        depth += 1
        guard depth <= DQLParser.maximumNestingDepth else {
            throw DQLError(.nestingTooDeep, "nesting is deeper than \(DQLParser.maximumNestingDepth) levels", at: current.position)
        }
    }

    /// A name: a bare word that is not a reserved keyword, or a backquoted name.
    mutating func name(_ expected: String) throws(DQLError) -> String {
        switch current.kind {
        case .identifier(let name) where current.keyword?.isReserved != true:
            advance()
            return name
        case .quotedIdentifier(let name):
            advance()
            return name
        case .identifier(let name):
            let error = fail(expected)
            throw DQLError(.syntax, error.message + " (a keyword; write `\(name)` in backquotes to use it as a name)", at: current.position)
        default:
            throw fail(expected)
        }
    }

    /// Any word, keywords included, or a backquoted name: where no keyword can stand (after `.`
    /// or AS).
    mutating func anyName(_ expected: String) throws(DQLError) -> String {
        switch current.kind {
        case .identifier(let name), .quotedIdentifier(let name):
            advance()
            return name
        default:
            throw fail(expected)
        }
    }

    // MARK: - Statements

    mutating func statement() throws(DQLError) -> DQLStatement {
        let statement: DQLStatement
        switch current.keyword {
        case .explain?, .profile?: statement = try explained()
        case .show?: statement = .settings(try show())
        case .alter?: statement = .settings(try alterSystem())
        default: statement = try plainStatement(choices: "SELECT, INSERT, UPDATE, DELETE, EVICT, CREATE INDEX, DROP INDEX, EXPLAIN, PROFILE, SHOW or ALTER SYSTEM")
        }
        if accept(.semicolon) {
            guard current.kind == .end else {
                throw DQLError(.syntax, "expected the end of input after ';' (one statement at a time), found \(current.quoted)", at: current.position)
            }
        }
        guard current.kind == .end else { throw fail(expectedNext) }
        return statement
    }

    /// A statement other than EXPLAIN and PROFILE; `choices` lists what could stand here, for
    /// the error when nothing does.
    private mutating func plainStatement(choices: String) throws(DQLError) -> DQLStatement {
        let first = current
        switch first.keyword {
        case .select?: return try select()
        case .insert?: return try insert()
        case .update?: return try update()
        case .delete?, .evict?: return try removal()
        case .create?: return try createIndex()
        case .drop?: return try dropIndex()
        default:
            if first.kind == .end {
                throw DQLError(.unknownStatement, "empty statement: expected \(choices)", at: first.position)
            }
            throw DQLError(.unknownStatement, "unknown statement \(first.quoted): expected \(choices)", at: first.position)
        }
    }

    /// `EXPLAIN statement` or `PROFILE select`. Neither nests, and PROFILE refuses a write
    /// here, before anything could run it.
    private mutating func explained() throws(DQLError) -> DQLStatement {
        let profiling = at(.profile)
        let word = profiling ? "PROFILE" : "EXPLAIN"
        advance()
        let inner = current
        if inner.kind == .end {
            throw DQLError(.syntax, "expected a statement after \(word), found the end of the statement", at: inner.position)
        }
        if let keyword = inner.keyword, keyword == .explain || keyword == .profile {
            throw DQLError(.syntax, "\(word) cannot be followed by \(keyword.rawValue): give it the statement itself", at: inner.position)
        }
        guard profiling else {
            return .explain(try plainStatement(choices: "SELECT, INSERT, UPDATE, DELETE, EVICT, CREATE INDEX or DROP INDEX after EXPLAIN"))
        }
        if let keyword = inner.keyword, [.insert, .update, .delete, .evict, .create, .drop].contains(keyword) {
            throw DQLError(.invalidStatement, "PROFILE runs SELECTs only; use EXPLAIN to see a write's plan", at: inner.position)
        }
        guard case .select(let select) = try plainStatement(choices: "SELECT after PROFILE") else {
            throw DQLError(.invalidStatement, "PROFILE runs SELECTs only; use EXPLAIN to see a write's plan", at: inner.position)
        }
        return .profile(select)
    }

    /// `[COLLECTION] name [(path TYPE, …)]`.
    mutating func collectionReference(after context: String) throws(DQLError) -> (String, TypeHints) {
        if at(.collection), Self.startsName(peek(1)) { advance() }
        let collection = try collectionName(after: context)
        var hints = TypeHints()
        if at(.leftParen) { hints = try typeHints() }
        return (collection, hints)
    }

    /// A collection's name, `system:name` included: that lexes as the name `system` and the
    /// parameter `:name`, and since no parameter can follow a collection name, together they
    /// are a system collection.
    mutating func collectionName(after context: String) throws(DQLError) -> String {
        let collection = try name("a collection name after \(context)")
        guard collection == "system", case .parameter(let rest) = current.kind else { return collection }
        advance()
        return "system:" + rest
    }

    /// Whether `token` is a collection name after `COLLECTION` (rather than `COLLECTION` itself
    /// being the name, as in `FROM collection WHERE …`).
    private static func startsName(_ token: DQLToken) -> Bool {
        switch token.kind {
        case .quotedIdentifier: return true
        case .identifier:
            switch token.keyword {
            case nil: return true
            case let keyword?:
                return !keyword.isReserved && ![.documents, .initial, .set, .unset, .apply].contains(keyword)
            }
        default: return false
        }
    }

    /// `(path TYPE, …)` with TYPE one of MAP, REGISTER, PN_COUNTER (or COUNTER), ATTACHMENT.
    mutating func typeHints() throws(DQLError) -> TypeHints {
        try expect(.leftParen, "before the field types")
        var fields: [FieldPath: FieldType] = [:]
        repeat {
            let (path, position) = try fieldPath("a field name in the field types")
            let type: FieldType
            switch current.keyword {
            case .map?: type = .map
            case .register?: type = .register
            case .pnCounter?, .counter?: type = .counter
            case .attachment?: type = .attachment
            default: throw fail("a field type (MAP, REGISTER, PN_COUNTER or ATTACHMENT) after '\(path)'")
            }
            advance()
            guard fields.updateValue(type, forKey: path) == nil else {
                throw DQLError(.invalidStatement, "the type of '\(path)' is given twice", at: position)
            }
        } while accept(.comma)
        try expect(.rightParen, "or ',' after a field type")
        return TypeHints(fields: fields)
    }

    /// A path of field names only (`a.b`, `` a.`c d` ``, `a['e']`), for SET, UNSET, APPLY, type
    /// hints and indexes: array elements cannot be written on their own (arrays are registers).
    mutating func fieldPath(_ expected: String) throws(DQLError) -> (FieldPath, DQLSourcePosition) {
        let position = current.position
        var names = [try name(expected)]
        for step in try pathSteps() {
            guard case .field(let name) = step else {
                throw DQLError(.syntax, "'\(FieldPath(names))' is followed by an array index; only whole fields can be named here (arrays are replaced whole)", at: position)
            }
            names.append(name)
        }
        return (FieldPath(names), position)
    }

    // MARK: SELECT

    mutating func select() throws(DQLError) -> DQLStatement {
        advance()
        // DISTINCT is a keyword here unless it is the name of the first projected field.
        var distinct = false
        if at(.distinct), ![.from, .as].contains(peek(1).keyword),
            ![DQLSymbol.comma, .dot, .leftBracket].contains(where: { peek(1).kind == .symbol($0) })
        {
            advance()
            distinct = true
        }
        let projection: DQLProjection
        var itemPositions: [DQLSourcePosition] = []
        if at(.star) {
            itemPositions = [current.position]
            advance()
            if at(.comma) { throw DQLError(.syntax, "'*' cannot be combined with other projections", at: current.position) }
            projection = .all
        } else if at(.from) {
            throw fail("'*' or a list of expressions after SELECT")
        } else {
            aggregateBan = nil
            let parsed = try projectionItems()
            projection = parsed.projection
            itemPositions = parsed.positions
        }
        try expect(.from, "after the projection")
        let (collection, hints) = try collectionReference(after: "FROM")
        var select = DQLSelect(collection: collection, typeHints: hints, projection: projection)
        select.distinct = distinct
        expectedNext = "WHERE, GROUP BY, ORDER BY, LIMIT, OFFSET or the end of the statement"
        if accept(.where) {
            aggregateBan = "filter groups by aggregates with HAVING, not WHERE"
            select.whereClause = try expression().expr
            expectedNext = "GROUP BY, ORDER BY, LIMIT, OFFSET or the end of the statement"
        }
        if accept(.group) {
            try expect(.by, "after GROUP")
            aggregateBan = "GROUP BY cannot group by an aggregate"
            repeat {
                let position = current.position
                let key = try expression().expr
                if key.isConstant {
                    throw DQLError(.invalidStatement, "GROUP BY \(key) groups by a constant; name a field (GROUP BY does not take column numbers)", at: position)
                }
                select.groupBy.append(key)
            } while accept(.comma)
            guard select.groupBy.count <= DQLGrouping.maximumKeys else {
                throw DQLError(.invalidStatement, "GROUP BY takes at most \(DQLGrouping.maximumKeys) expressions", at: current.position)
            }
            expectedNext = "',', HAVING, ORDER BY, LIMIT, OFFSET or the end of the statement"
        }
        var havingPosition = DQLSourcePosition.start
        if accept(.having) {
            aggregateBan = nil
            havingPosition = current.position
            select.having = try expression().expr
            expectedNext = "ORDER BY, LIMIT, OFFSET or the end of the statement"
        }
        var orderPositions: [DQLSourcePosition] = []
        if accept(.order) {
            try expect(.by, "after ORDER")
            aggregateBan = nil
            repeat {
                orderPositions.append(current.position)
                var term = try expression().expr
                // As in SQL, ORDER BY may name a projection by its alias.
                if case .path(let path) = term, path.steps.count == 1, case .field(let name)? = path.steps.first,
                    case .items(let items) = projection,
                    let item = items.first(where: { $0.alias == name })
                {
                    term = item.expression
                }
                var descending = false
                if accept(.desc) { descending = true } else { _ = accept(.asc) }
                select.orderBy.append(DQLOrderTerm(expression: term, descending: descending))
            } while accept(.comma)
            expectedNext = "ASC, DESC, ',', LIMIT, OFFSET or the end of the statement"
        }
        aggregateBan = Self.aggregatesOutsideSelect
        if accept(.limit) {
            select.limit = try count("LIMIT")
            expectedNext = "OFFSET or the end of the statement"
        }
        if accept(.offset) {
            select.offset = try count("OFFSET")
            expectedNext = select.limit == nil ? "LIMIT or the end of the statement" : "the end of the statement"
            if select.limit == nil, accept(.limit) {
                select.limit = try count("LIMIT")
                expectedNext = "the end of the statement"
            }
        }
        // Refuses what cannot be grouped (a field outside GROUP BY, SELECT * with aggregates) now,
        // with the position of the clause at fault, rather than when the statement runs.
        _ = try DQLGrouping(select, positions: DQLGrouping.Positions(items: itemPositions, having: havingPosition, orderBy: orderPositions))
        return .select(select)
    }

    static let aggregatesOutsideSelect = "aggregates belong in the projection, HAVING or ORDER BY of a SELECT"

    private mutating func projectionItems() throws(DQLError) -> (projection: DQLProjection, positions: [DQLSourcePosition]) {
        var items: [DQLProjectionItem] = []
        var positions: [String: DQLSourcePosition] = [:]
        var starts: [DQLSourcePosition] = []
        repeat {
            let position = current.position
            starts.append(position)
            let expression = try expression().expr
            var alias: String?
            if accept(.as) { alias = try anyName("a name after AS") }
            let name = alias ?? Self.implicitName(of: expression) ?? "$\(items.count + 1)"
            guard positions.updateValue(position, forKey: name) == nil else {
                throw DQLError(.invalidStatement, "two projections are named '\(name)'; give one of them another name with AS", at: position)
            }
            items.append(DQLProjectionItem(expression: expression, alias: alias, name: name))
        } while accept(.comma)
        return (.items(items), starts)
    }

    private static func implicitName(of expression: DQLExpression) -> String? {
        switch expression {
        case .path(let path): return path.lastFieldName
        // As SQL engines name them: `count(*)`, `sum(price)`, `max(a.b)`.
        case .call(let function, _, _) where function.isAggregate: return expression.description
        case .access(_, let steps):
            if case .field(let name)? = steps.last { return name }
            return nil
        default: return nil
        }
    }

    /// A LIMIT or OFFSET count: a non-negative integer literal or an argument.
    private mutating func count(_ clause: String) throws(DQLError) -> DQLCount {
        let token = current
        switch token.kind {
        case .integer(let magnitude) where magnitude <= UInt64(Int64.max):
            advance()
            return .literal(Int64(magnitude))
        case .parameter(let name):
            advance()
            return .argument(name: name, position: token.position)
        case .variable("args"):
            let argument = try primary().expr
            if case .argument(let name, let position) = argument { return .argument(name: name, position: position) }
            throw DQLError(.syntax, "expected a non-negative integer or an argument after \(clause)", at: token.position)
        default:
            throw fail("a non-negative integer or an argument after \(clause)")
        }
    }
}
