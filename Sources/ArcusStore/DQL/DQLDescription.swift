import ArcusCRDT

/// DQL text for parsed trees: every operator in parentheses, keywords in capitals, so that the
/// text parses back to an equal tree (when it nests less than `DQLParser.maximumNestingDepth`).
/// Meant for logs, error reports and tests.
extension DQLExpression: CustomStringConvertible {
    public var description: String {
        var out = ""
        write(to: &out)
        return out
    }

    func write(to out: inout String) {
        switch self {
        case .literal(let value):
            DQLText.literal(value, to: &out)
        case .argument(let name, _):
            out += DQLPath.isPlainName(name) ? ":" + name : "$args[" + DQLText.quoted(name) + "]"
        case .path(let path):
            out += path.description
        case .access(let base, let steps):
            out += "("
            base.write(to: &out)
            out += ")"
            DQLText.steps(steps, to: &out)
        case .unary(.not, let operand):
            out += "(NOT "
            operand.write(to: &out)
            out += ")"
        case .unary(.negate, let operand):
            // The space keeps `- -5` from reading as a `--` comment.
            out += "(- "
            operand.write(to: &out)
            out += ")"
        case .binary(let op, let lhs, let rhs):
            out += "("
            lhs.write(to: &out)
            out += " \(op.rawValue) "
            rhs.write(to: &out)
            out += ")"
        case .and(let terms):
            DQLText.list(terms, open: "(", separator: " AND ", close: ")", to: &out)
        case .or(let terms):
            DQLText.list(terms, open: "(", separator: " OR ", close: ")", to: &out)
        case .call(.count, let arguments, _) where arguments.isEmpty:
            out += "count(*)"
        case .call(let function, let arguments, _):
            DQLText.list(arguments, open: function.rawValue + "(", separator: ", ", close: ")", to: &out)
        case .array(let elements):
            DQLText.list(elements, open: "[", separator: ", ", close: "]", to: &out)
        case .object(let fields):
            out += "{"
            for (i, field) in fields.enumerated() {
                if i > 0 { out += ", " }
                out += DQLText.quoted(field.key) + ": "
                field.value.write(to: &out)
            }
            out += "}"
        case .in(let value, let collection, let negated):
            out += "("
            value.write(to: &out)
            out += negated ? " NOT IN " : " IN "
            // After IN a parenthesis opens SQL's list (`IN ('a')` is `IN ['a']`), so arithmetic,
            // which the parser reads there without one, is written without its own.
            switch collection {
            case .binary(let op, let lhs, let rhs):
                lhs.write(to: &out)
                out += " \(op.rawValue) "
                rhs.write(to: &out)
            case .unary(.negate, let operand):
                out += "- "
                operand.write(to: &out)
            default:
                collection.write(to: &out)
            }
            out += ")"
        case .like(let value, let pattern, _, let negated):
            DQLText.infix(value, negated ? "NOT LIKE" : "LIKE", pattern, to: &out)
        case .isNull(let value, let negated):
            out += "("
            value.write(to: &out)
            out += negated ? " IS NOT NULL)" : " IS NULL)"
        case .isMissing(let value, let negated):
            out += "("
            value.write(to: &out)
            out += negated ? " IS NOT MISSING)" : " IS MISSING)"
        case .between(let value, let low, let high, let negated):
            out += "("
            value.write(to: &out)
            out += negated ? " NOT BETWEEN " : " BETWEEN "
            low.write(to: &out)
            out += " AND "
            high.write(to: &out)
            out += ")"
        }
    }
}

extension DQLStatement: CustomStringConvertible {
    public var description: String {
        switch self {
        case .select(let s):
            var out = s.distinct ? "SELECT DISTINCT " : "SELECT "
            switch s.projection {
            case .all: out += "*"
            case .items(let items):
                out += items.map { item in
                    item.alias.map { "\(item.expression) AS \(DQLPath.quotedName($0, first: false))" } ?? item.expression.description
                }.joined(separator: ", ")
            }
            out += " FROM " + DQLText.collection(s.collection, s.typeHints)
            DQLText.whereClause(s.whereClause, to: &out)
            if !s.groupBy.isEmpty { out += " GROUP BY " + s.groupBy.map(\.description).joined(separator: ", ") }
            if let having = s.having { out += " HAVING " + having.description }
            if !s.orderBy.isEmpty {
                out += " ORDER BY " + s.orderBy.map { "\($0.expression)\($0.descending ? " DESC" : "")" }.joined(separator: ", ")
            }
            if let limit = s.limit { out += " LIMIT " + DQLText.count(limit) }
            if let offset = s.offset { out += " OFFSET " + DQLText.count(offset) }
            return out
        case .insert(let s):
            var out = "INSERT INTO " + DQLText.collection(s.collection, s.typeHints)
            out += s.initial ? " INITIAL DOCUMENTS " : " DOCUMENTS "
            out += s.documents.map { "(\($0.expression))" }.joined(separator: ", ")
            switch s.conflict {
            case .fail: break
            case .doUpdate: out += " ON ID CONFLICT DO UPDATE"
            case .doNothing: out += " ON ID CONFLICT DO NOTHING"
            case .doUpdateLocalDiff: out += " ON ID CONFLICT DO UPDATE_LOCAL_DIFF"
            }
            return out
        case .update(let s):
            var out = "UPDATE " + DQLText.collection(s.collection, s.typeHints)
            if !s.assignments.isEmpty {
                out += " SET " + s.assignments.map { "\(DQLPath($0.path)) = \($0.value)" }.joined(separator: ", ")
            }
            if !s.unsets.isEmpty { out += " UNSET " + s.unsets.map { DQLPath($0).description }.joined(separator: ", ") }
            DQLText.whereClause(s.whereClause, to: &out)
            return out
        case .updateCounter(let s):
            var out = "UPDATE " + DQLText.collection(s.collection, s.typeHints) + " APPLY "
            out += s.increments.map { "\(DQLPath($0.path)) PN_INCREMENT BY \($0.amount)" }.joined(separator: ", ")
            DQLText.whereClause(s.whereClause, to: &out)
            return out
        case .delete(let s), .evict(let s):
            var out = (self.isEvict ? "EVICT FROM " : "DELETE FROM ") + DQLText.collection(s.collection, s.typeHints)
            DQLText.whereClause(s.whereClause, to: &out)
            return out
        case .createIndex(let s):
            return "CREATE INDEX \(s.ifNotExists ? "IF NOT EXISTS " : "")\(DQLPath.quotedName(s.name, first: true)) ON "
                + DQLPath.quotedName(s.collection, first: true) + " ("
                + s.paths.map { DQLPath($0).description }.joined(separator: ", ") + ")"
        case .dropIndex(let s):
            return "DROP INDEX \(s.ifExists ? "IF EXISTS " : "")\(DQLPath.quotedName(s.name, first: true))"
                + (s.collection.map { " ON " + DQLPath.quotedName($0, first: true) } ?? "")
        case .explain(let s):
            return "EXPLAIN " + s.description
        case .profile(let s):
            return "PROFILE " + DQLStatement.select(s).description
        case .settings(let s):
            return s.description
        }
    }

    private var isEvict: Bool {
        if case .evict = self { return true }
        return false
    }
}

/// Small writers shared by the descriptions.
enum DQLText {
    static func quoted(_ text: String) -> String {
        "'" + text.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''") + "'"
    }

    static func literal(_ value: Value, to out: inout String) {
        switch value {
        case .null: out += "NULL"
        case .bool(let b): out += b ? "TRUE" : "FALSE"
        case .int(let i): out += String(i)
        case .double(let d): out += d.description
        case .string(let s): out += quoted(s)
        case .binary(let bytes): out += "<\(bytes.count) bytes>"  // no literal syntax; only arguments hold binary
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += ", " }
                literal(item, to: &out)
            }
            out += "]"
        case .object(let fields):
            out += "{"
            for (i, key) in fields.keys.sorted().enumerated() {
                if i > 0 { out += ", " }
                out += quoted(key) + ": "
                if let field = fields[key] { literal(field, to: &out) }
            }
            out += "}"
        }
    }

    static func steps(_ steps: [DQLPathStep], to out: inout String) {
        for step in steps {
            switch step {
            case .field(let name): out += "." + DQLPath.quotedName(name, first: false)
            case .index(let n): out += "[\(n)]"
            }
        }
    }

    static func list(_ items: [DQLExpression], open: String, separator: String, close: String, to out: inout String) {
        out += open
        for (i, item) in items.enumerated() {
            if i > 0 { out += separator }
            item.write(to: &out)
        }
        out += close
    }

    static func infix(_ lhs: DQLExpression, _ op: String, _ rhs: DQLExpression, to out: inout String) {
        out += "("
        lhs.write(to: &out)
        out += " \(op) "
        rhs.write(to: &out)
        out += ")"
    }

    static func collection(_ name: String, _ hints: TypeHints) -> String {
        var out = DQLPath.quotedName(name, first: true)
        guard !hints.fields.isEmpty else { return out }
        out = "COLLECTION " + out + " ("
        out += hints.fields.sorted { $0.key < $1.key }.map { "\(DQLPath($0.key)) \($0.value.rawValue)" }.joined(separator: ", ")
        return out + ")"
    }

    static func whereClause(_ condition: DQLExpression?, to out: inout String) {
        if let condition { out += " WHERE \(condition)" }
    }

    static func count(_ count: DQLCount) -> String {
        switch count {
        case .literal(let n): return String(n)
        case .argument(let name, _): return DQLPath.isPlainName(name) ? ":" + name : "$args[" + quoted(name) + "]"
        }
    }
}
