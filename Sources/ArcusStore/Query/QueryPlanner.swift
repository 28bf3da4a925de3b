import ArcusCRDT
import GRDB

/// Chooses how to find a statement's candidate documents: by `_id` through the primary key, by
/// an indexed field through its expression index, or by scanning the collection. Candidates are
/// a superset: every one is checked against the full WHERE clause by the DQL evaluator, so the
/// SQL only has to be at least as permissive as DQL's comparison rules.
struct QueryPlanner {
    let db: Database
    let indexes: [FieldIndex]

    struct Plan {
        var sql: String
        var arguments: StatementArguments
        var description: String
        /// How the candidates are found, for EXPLAIN.
        var access: Access
        /// SQL counting the candidates `sql` yields (same arguments): EXPLAIN's estimate. For a
        /// count plan, `sql` itself.
        var countSQL: String

        init(source: String, arguments: StatementArguments, description: String, access: Access) {
            sql = "SELECT json FROM " + source
            countSQL = "SELECT COUNT(*) FROM " + source
            self.arguments = arguments
            self.description = description
            self.access = access
        }

        init(countSQL: String, arguments: StatementArguments, description: String, access: Access) {
            sql = countSQL
            self.countSQL = countSQL
            self.arguments = arguments
            self.description = description
            self.access = access
        }
    }

    /// The access paths the planner chooses between.
    enum Access {
        /// The primary key, for `_id = …` or `_id IN […]`.
        case byID([Value])
        /// An index's first field equal to one of the values.
        case indexEquality(FieldIndex, FieldPath, [Value])
        /// An index's first field within numeric bounds (`op`, bound).
        case indexRange(FieldIndex, FieldPath, [(String, Value)])
        /// Every live document of the collection.
        case scan
        /// COUNT answered by SQL: of the whole collection, through an index, or nothing at all.
        case countCollection
        case countByIndex(FieldIndex, FieldPath, [Value])
        case countNothing
        /// GROUP BY one field with only COUNT(*), counted per key value by SQL over the
        /// documents the inner (count) access finds.
        indirect case countPerField(FieldPath, within: Access)
    }

    func plan(collection: String, where condition: DQLExpression?) throws -> Plan {
        if let ids = try DQLPredicateAnalysis.idValues(in: condition, arguments: [:]), !ids.isEmpty, ids.count <= 500 {
            let marks = Array(repeating: "?", count: ids.count).joined(separator: ", ")
            var arguments: StatementArguments = [collection]
            for id in ids { _ = arguments.append(contentsOf: [id.jsonString]) }
            return Plan(source: "document WHERE collection = ? AND id IN (\(marks)) AND json IS NOT NULL",
                        arguments: arguments, description: "by _id", access: .byID(ids))
        }
        let (equalities, ranges) = try DQLPredicateAnalysis.analyse(condition, arguments: [:])
        for index in indexes where index.collection == collection {
            guard let path = index.paths.first else { continue }
            let expression = FieldIndex.expression(for: path)
            if let equality = equalities.first(where: { $0.path == path }),
                equality.values.allSatisfy(Self.pushesDown), !equality.values.isEmpty, equality.values.count <= 500
            {
                let marks = Array(repeating: "?", count: equality.values.count).joined(separator: ", ")
                var arguments: StatementArguments = [collection]
                for value in equality.values { _ = arguments.append(contentsOf: [Self.sqlValue(value)]) }
                // INDEXED BY: without statistics SQLite may prefer the primary key's collection prefix.
                return Plan(source: "document INDEXED BY \"\(index.sqliteName)\" WHERE collection = ? AND \(expression) IN (\(marks)) AND json IS NOT NULL",
                            arguments: arguments, description: "index \(index.name) (equality)",
                            access: .indexEquality(index, path, equality.values))
            }
            let bounds = ranges.filter { $0.path == path && Self.isNumber($0.bound) }
            if !bounds.isEmpty {
                var clauses: [String] = []
                var used: [(String, Value)] = []
                var arguments: StatementArguments = [collection]
                for bound in bounds {
                    guard let op = Self.sqlOperator(bound.op) else { continue }
                    clauses.append("\(expression) \(op) ?")
                    used.append((op, bound.bound))
                    _ = arguments.append(contentsOf: [Self.sqlValue(bound.bound)])
                }
                if !clauses.isEmpty {
                    return Plan(source: "document INDEXED BY \"\(index.sqliteName)\" WHERE collection = ? AND \(clauses.joined(separator: " AND ")) AND json IS NOT NULL",
                                arguments: arguments, description: "index \(index.name) (range)", access: .indexRange(index, path, used))
                }
            }
        }
        return Plan(source: "document WHERE collection = ? AND json IS NOT NULL", arguments: [collection],
                    description: "collection scan", access: .scan)
    }

    /// A query that counts, in SQL alone, the documents `condition` matches, when SQL can decide
    /// that exactly (not just a superset): no condition, or one `path = value` or `path IN […]`
    /// on the first field of an index, with values that are numbers or strings that are not
    /// dates. `json_type` keeps out the field values SQL would compare differently from DQL:
    /// booleans (`json_extract` turns them into 1 and 0), arrays and objects (JSON text), null.
    /// Nil when the documents must be read and evaluated.
    func countPlan(collection: String, where condition: DQLExpression?) throws -> Plan? {
        guard let exact = try exactSource(collection: collection, where: condition) else { return nil }
        if case .countNothing = exact.access {
            return Plan(countSQL: "SELECT 0", arguments: [], description: exact.description, access: exact.access)
        }
        return Plan(countSQL: "SELECT COUNT(*) FROM " + exact.source, arguments: exact.arguments, description: exact.description, access: exact.access)
    }

    /// How a grouped SELECT whose rows need only counts is counted in SQL (`countPlan`, or
    /// `countPerFieldPlan` for one GROUP BY field); nil when its documents must be read.
    func countingPlan(_ select: DQLSelect, _ grouping: DQLGrouping) throws -> Plan? {
        guard !VirtualCollections.isVirtual(select.collection) else { return nil }
        if grouping.needsOnlyCount { return try countPlan(collection: select.collection, where: select.whereClause) }
        guard let key = grouping.countedPerField else { return nil }
        return try countPerFieldPlan(collection: select.collection, where: select.whereClause, key: key)
    }

    /// A query that counts, in SQL alone, the documents `condition` matches per value of the
    /// field `key` (GROUP BY key with only COUNT(*)), where `countPlan` could count them all.
    /// Rows: the key as `json_extract` gives it (NULL for null and missing alike, as DQL
    /// groups them), its JSON kind, and the count. Where SQL may have grouped differently from
    /// DQL — a kind that is a boolean (1 and 0 to SQL, the same as numbers), an array or an
    /// object (JSON text), or one key in two rows (an integer and a real of equal value, which
    /// DQL groups as one and shows as the first document has it) — the caller reads the
    /// documents instead. Strings group by their bytes in both. (Grouping by the kind too costs
    /// one `json_type` a document, on the JSON SQLite has just parsed for the key.)
    func countPerFieldPlan(collection: String, where condition: DQLExpression?, key: FieldPath) throws -> Plan? {
        guard (try? FieldIndex.checkIndexable(key)) != nil, let exact = try exactSource(collection: collection, where: condition) else { return nil }
        let value = FieldIndex.expression(for: key)
        let type = FieldIndex.typeExpression(for: key)
        let source = "FROM " + exact.source
        var plan = Plan(countSQL: "SELECT \(value) AS key, \(type) AS kind, COUNT(*) \(source) GROUP BY key, kind",
                        arguments: exact.arguments, description: "count per \(DQLPath(key)) (\(exact.description))",
                        access: .countPerField(key, within: exact.access))
        plan.countSQL = "SELECT COUNT(*) " + source
        return plan
    }

    /// The FROM … WHERE … part of a query that yields exactly the documents `condition`
    /// matches, when SQL can decide that (see `countPlan`); nil otherwise.
    private func exactSource(collection: String, where condition: DQLExpression?) throws
        -> (source: String, arguments: StatementArguments, description: String, access: Access)? {
        guard let condition else {
            return ("document WHERE collection = ? AND json IS NOT NULL", [collection], "count of the collection", .countCollection)
        }
        guard DQLPredicateAnalysis.conjuncts(of: condition).count == 1 else { return nil }
        switch condition {
        case .binary(.equal, _, _), .in(_, _, negated: false): break
        default: return nil
        }
        let (equalities, ranges) = try DQLPredicateAnalysis.analyse(condition, arguments: [:])
        guard equalities.count == 1, ranges.isEmpty, let equality = equalities.first, equality.values.count <= 500,
            equality.values.allSatisfy(Self.pushesDown),
            let index = indexes.first(where: { $0.collection == collection && $0.paths.first == equality.path })
        else { return nil }
        if equality.values.isEmpty {
            // `= NULL`, `IN []`, `IN [NULL]`: nothing matches.
            return ("document WHERE 0", [], "count of nothing", .countNothing)
        }
        let expression = FieldIndex.expression(for: equality.path)
        // The type check parses each candidate's JSON: only where a value could meet one of
        // those SQL sees alike (see `mayMeetOtherKinds`).
        let type = FieldIndex.typeExpression(for: equality.path)
        let typeCheck = equality.values.contains(where: Self.mayMeetOtherKinds) ? " AND \(type) IN ('text', 'integer', 'real')" : ""
        let marks = Array(repeating: "?", count: equality.values.count).joined(separator: ", ")
        var arguments: StatementArguments = [collection]
        for value in equality.values { _ = arguments.append(contentsOf: [Self.sqlValue(value)]) }
        // (A deleted document's json is NULL, and so then is the field: the equality keeps it out.)
        return ("document INDEXED BY \"\(index.sqliteName)\" WHERE collection = ? AND \(expression) IN (\(marks))\(typeCheck)",
                arguments, "count by index \(index.name)", .countByIndex(index, equality.path, equality.values))
    }

    /// Whether SQLite's equality on `json_extract` could find `value` in a field that holds a
    /// boolean (which `json_extract` gives as 1 or 0), an array or an object (given as JSON
    /// text, which starts with `[` or `{`). Other kinds cannot meet: SQL NULL equals nothing,
    /// and a number never equals text (the expression and the argument have no affinity).
    static func mayMeetOtherKinds(_ value: Value) -> Bool {
        switch value {
        case .int(let i): return i == 0 || i == 1
        case .double(let d): return d == 0 || d == 1
        case .string(let s): return s.hasPrefix("[") || s.hasPrefix("{")
        default: return true
        }
    }

    /// Values whose SQLite equality on `json_extract` finds every document DQL equality finds:
    /// numbers (compared by value in both) and strings that are not dates (DQL compares dates
    /// as instants, across time zones, which text equality would miss).
    static func pushesDown(_ value: Value) -> Bool {
        switch value {
        case .int, .double: return true
        case .string(let s): return ISO8601Instant(s) == nil
        default: return false
        }
    }

    static func isNumber(_ value: Value) -> Bool {
        switch value {
        case .int, .double: return true
        default: return false
        }
    }

    static func sqlValue(_ value: Value) -> any DatabaseValueConvertible {
        switch value {
        case .int(let i): return i
        case .double(let d): return d
        case .string(let s): return s
        default: return value.jsonString
        }
    }

    static func sqlOperator(_ op: DQLBinaryOperator) -> String? {
        switch op {
        case .less: return "<"
        case .lessOrEqual: return "<="
        case .greater: return ">"
        case .greaterOrEqual: return ">="
        default: return nil
        }
    }
}
