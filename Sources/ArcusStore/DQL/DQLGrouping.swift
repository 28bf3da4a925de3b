import ArcusCRDT

/// How a grouped SELECT (GROUP BY, HAVING, an aggregate, or DISTINCT) turns the documents its
/// WHERE clause matched into rows.
///
/// - Documents fall into groups by the values of the GROUP BY expressions. A document whose key
///   is MISSING groups with those whose key is NULL, as SQL puts every NULL in one group; the
///   row shows the key as null. Keys are equal as DQL's value order sees them (`1` and `1.0`
///   are one group; strings by their bytes).
/// - Without GROUP BY, aggregates fold every matched document into one row, even when nothing
///   matched: `COUNT(*)` is then 0 and SUM, AVG, MIN and MAX are null.
/// - `SELECT DISTINCT a, b` without aggregates groups by its projection; with GROUP BY or
///   aggregates it drops repeated rows after grouping.
/// - Aggregates: `COUNT(*)` counts documents; `COUNT(x)` the documents where `x` is neither
///   MISSING nor NULL; `SUM(x)` and `AVG(x)` add the numbers among the values of `x` (other
///   kinds are skipped; AVG is a double); `MIN(x)` and `MAX(x)` take the least and greatest
///   value that is neither MISSING nor NULL in `DQLValueOrder`. Over no values all but COUNT
///   are null.
/// - HAVING filters groups, ORDER BY sorts rows (without it, rows come in group key order),
///   then OFFSET and LIMIT cut the window. HAVING may name a projection by its alias.
/// - Outside aggregates, the projection, HAVING and ORDER BY may only use GROUP BY expressions
///   (the parser refuses the statement otherwise). Rows have only the projected names: no `_id`.
///
/// Internally, each GROUP BY expression and each aggregate call in the projection, HAVING and
/// ORDER BY is replaced by a slot (an argument with a name no statement can write) holding the
/// group's value, so rows are computed by the ordinary evaluator.
struct DQLGrouping: Sendable {
    /// At most this many GROUP BY expressions (each is evaluated for every document).
    static let maximumKeys = 32

    /// Where the parts of the statement start, for errors; the executor, which runs statements
    /// the parser already checked, has none.
    struct Positions {
        var items: [DQLSourcePosition] = []
        var having: DQLSourcePosition = .start
        var orderBy: [DQLSourcePosition] = []
    }

    struct Aggregate: Sendable {
        var function: DQLFunction
        /// nil for `COUNT(*)`.
        var argument: DQLExpression?
    }

    let keys: [DQLExpression]
    let aggregates: [Aggregate]
    let items: [DQLProjectionItem]
    let having: DQLExpression?
    let orderBy: [DQLOrderTerm]
    /// DISTINCT over rows made from groups (with GROUP BY or aggregates).
    let distinctRows: Bool

    /// The grouping of `select`, or nil when it is not grouped. Throws when the statement uses
    /// a field outside GROUP BY and aggregates, or groups `SELECT *`.
    init?(_ select: DQLSelect, positions: Positions = Positions()) throws(DQLError) {
        guard select.isGrouped else { return nil }
        guard case .items(let projected) = select.projection else {
            throw DQLError(.invalidStatement, "SELECT * cannot be combined with GROUP BY, HAVING or aggregates; list the fields and aggregates to return",
                           at: positions.items.first ?? .start)
        }
        let aggregating = select.having != nil || projected.contains { $0.expression.containsAggregate }
            || select.orderBy.contains { $0.expression.containsAggregate }
        var builder = Builder()
        if !select.groupBy.isEmpty {
            builder.keys = select.groupBy
            builder.problem = .notInGroupBy
        } else if select.distinct && !aggregating {
            builder.keys = projected.map(\.expression)
            builder.problem = .notProjected
        } else {
            builder.problem = .noGroupBy
        }
        for (i, key) in builder.keys.enumerated() where builder.keyIndex[key.description] == nil {
            builder.keyIndex[key.description] = i
        }
        var aliases: [String: DQLExpression] = [:]
        var items: [DQLProjectionItem] = []
        for (i, item) in projected.enumerated() {
            let position = i < positions.items.count ? positions.items[i] : .start
            if let alias = item.alias { aliases[alias] = item.expression }
            items.append(DQLProjectionItem(expression: try builder.rewrite(item.expression, aliases: [:], at: position),
                                           alias: item.alias, name: item.name))
        }
        having = try select.having.map { h throws(DQLError) in try builder.rewrite(h, aliases: aliases, at: positions.having) }
        var orderBy: [DQLOrderTerm] = []
        for (i, term) in select.orderBy.enumerated() {
            let position = i < positions.orderBy.count ? positions.orderBy[i] : .start
            orderBy.append(DQLOrderTerm(expression: try builder.rewrite(term.expression, aliases: [:], at: position), descending: term.descending))
        }
        self.items = items
        self.orderBy = orderBy
        keys = builder.keys
        aggregates = builder.aggregates
        distinctRows = select.distinct && builder.problem != .notProjected
    }

    /// Whether the rows need only the number of matching documents: no GROUP BY key and no
    /// aggregate but `COUNT(*)`, so that a planner may count without reading documents.
    var needsOnlyCount: Bool {
        keys.isEmpty && countsOnly
    }

    /// The one GROUP BY field when the rows need only each group's number of documents (one
    /// plain field key, no aggregate but `COUNT(*)`), so that a planner may count per key in SQL.
    var countedPerField: FieldPath? {
        guard keys.count == 1, case .path(let path) = keys[0], countsOnly else { return nil }
        return path.fieldPath
    }

    private var countsOnly: Bool {
        aggregates.allSatisfy { $0.function == .count && $0.argument == nil }
    }

    static func keySlot(_ i: Int) -> String { "\u{0}key\(i)" }
    static func aggregateSlot(_ i: Int) -> String { "\u{0}aggregate\(i)" }

    /// Replaces GROUP BY expressions and aggregate calls by slots, refusing any other path.
    private struct Builder {
        enum Problem { case notInGroupBy, notProjected, noGroupBy }
        var keys: [DQLExpression] = []
        var keyIndex: [String: Int] = [:]
        var aggregates: [Aggregate] = []
        var aggregateIndex: [String: Int] = [:]
        var problem = Problem.noGroupBy

        /// Recursion bounded by the expression height the parser allows.
        mutating func rewrite(_ e: DQLExpression, aliases: [String: DQLExpression], at position: DQLSourcePosition) throws(DQLError) -> DQLExpression {
            if case .literal = e { return e }
            if !keyIndex.isEmpty, let k = keyIndex[e.description] {
                return .argument(name: DQLGrouping.keySlot(k), position: position)
            }
            switch e {
            case .call(let function, let arguments, _) where function.isAggregate:
                let text = e.description
                if let i = aggregateIndex[text] { return .argument(name: DQLGrouping.aggregateSlot(i), position: position) }
                aggregateIndex[text] = aggregates.count
                aggregates.append(Aggregate(function: function, argument: arguments.first))
                return .argument(name: DQLGrouping.aggregateSlot(aggregates.count - 1), position: position)
            case .path(let path):
                if path.steps.count == 1, case .field(let name)? = path.steps.first, let aliased = aliases[name] {
                    return try rewrite(aliased, aliases: [:], at: position)
                }
                throw ungrouped(path.description, at: position)
            default:
                var children: [DQLExpression] = []
                for child in e.children { children.append(try rewrite(child, aliases: aliases, at: position)) }
                return e.withChildren(children)
            }
        }

        func ungrouped(_ field: String, at position: DQLSourcePosition) -> DQLError {
            switch problem {
            case .notInGroupBy:
                return DQLError(.invalidStatement, "'\(field)' is neither in GROUP BY nor inside an aggregate; add it to GROUP BY or aggregate it, e.g. MAX(\(field))", at: position)
            case .notProjected:
                return DQLError(.invalidStatement, "ORDER BY of a SELECT DISTINCT can only use what is projected; '\(field)' is not", at: position)
            case .noGroupBy:
                return DQLError(.invalidStatement, "'\(field)' is not inside an aggregate; with aggregates and no GROUP BY all documents make one row: add GROUP BY \(field) or aggregate it, e.g. MAX(\(field))", at: position)
            }
        }
    }
}

/// The groups of one grouped SELECT while documents are added, and the rows they make. Memory
/// is one entry per distinct key (at most one per document added) with one fold per aggregate.
struct DQLGroupTable {
    let grouping: DQLGrouping
    /// Evaluates each document's keys and aggregate inputs (with the conflict view, if read).
    private let evaluator: DQLEvaluator
    private var index: [[UInt8]: Int] = [:]
    private var groups: [(keys: [Value], folds: [Fold])] = []

    init(_ grouping: DQLGrouping, evaluator: DQLEvaluator = DQLEvaluator()) {
        self.grouping = grouping
        self.evaluator = evaluator
    }

    /// One aggregate's running state for one group.
    struct Fold {
        var count: Int64 = 0
        /// SUM and AVG: the running total (nil until a number is seen); MIN and MAX: the extreme.
        var value: Value?

        mutating func add(_ function: DQLFunction, _ input: Value?, counting all: Bool) {
            if all {
                count += 1
                return
            }
            guard let input, !input.isNull else { return }
            if function == .sum || function == .avg {
                switch input {
                case .int, .double: break
                default: return  // SUM and AVG skip what is not a number
                }
            }
            count += 1
            switch function {
            case .sum, .avg:
                value = value.map { DQLArithmetic.apply(.add, $0, input) ?? .null } ?? input
            case .min:
                if value == nil || DQLValueOrder.compare(input, value) == .less { value = input }
            case .max:
                if value == nil || DQLValueOrder.compare(input, value) == .greater { value = input }
            default:
                break
            }
        }

        func result(_ function: DQLFunction) -> Value {
            switch function {
            case .count: return .int(count)
            case .avg:
                switch value {
                case .int(let i)?: return .double(Double(i) / Double(count))
                case .double(let d)?: return .double(d / Double(count))
                default: return .null
                }
            default: return value ?? .null
            }
        }
    }

    mutating func add(_ document: Value) throws(DQLError) {
        var keys: [Value] = []
        keys.reserveCapacity(grouping.keys.count)
        for key in grouping.keys { keys.append(try evaluator.evaluate(key, in: document) ?? .null) }
        let at = group(keys)
        for (i, aggregate) in grouping.aggregates.enumerated() {
            let input = try aggregate.argument.map { a throws(DQLError) in try evaluator.evaluate(a, in: document) } ?? nil
            groups[at].folds[i].add(aggregate.function, input, counting: aggregate.argument == nil)
        }
    }

    /// Adds `count` documents that were counted rather than read, all with these GROUP BY key
    /// values; only when `grouping.needsOnlyCount` (no keys) or `grouping.countedPerField`.
    mutating func addCounted(_ count: Int64, keys: [Value] = []) {
        precondition(keys.isEmpty ? grouping.needsOnlyCount : grouping.countedPerField != nil && keys.count == 1,
                     "documents counted for a grouping that reads them")
        let at = group(keys)
        for i in groups[at].folds.indices { groups[at].folds[i].count += count }
    }

    /// The index of the group with these key values, made when it is new.
    private mutating func group(_ keys: [Value]) -> Int {
        let identity = Array(Value.array(keys.map(Self.normalised)).jsonString.utf8)
        if let found = index[identity] { return found }
        index[identity] = groups.count
        groups.append((keys, Array(repeating: Fold(), count: grouping.aggregates.count)))
        return groups.count - 1
    }

    /// The rows: HAVING applied, sorted by ORDER BY (ties and no ORDER BY: by group key), repeated
    /// rows dropped for DISTINCT, then the OFFSET/LIMIT window.
    func rows(offset: Int, limit: Int?) throws(DQLError) -> [Value] {
        var all = groups
        if all.isEmpty && grouping.keys.isEmpty {
            all.append(([], Array(repeating: Fold(), count: grouping.aggregates.count)))
        }
        var rows: [(sort: [Value?], keys: [Value], row: Value)] = []
        for group in all {
            var slots: [String: Value] = [:]
            for (i, key) in group.keys.enumerated() { slots[DQLGrouping.keySlot(i)] = key }
            for (i, aggregate) in grouping.aggregates.enumerated() {
                slots[DQLGrouping.aggregateSlot(i)] = group.folds[i].result(aggregate.function)
            }
            let evaluator = DQLEvaluator(arguments: slots)
            guard try evaluator.matches(grouping.having, document: .object([:])) else { continue }
            rows.append((try evaluator.sortKeys(grouping.orderBy, document: .object([:])), group.keys,
                         try evaluator.project(.items(grouping.items), document: .object([:]))))
        }
        let orderBy = grouping.orderBy
        rows.sort { a, b in
            if DQLEvaluator.precedes(a.sort, b.sort, orderBy: orderBy) { return true }
            if DQLEvaluator.precedes(b.sort, a.sort, orderBy: orderBy) { return false }
            return Self.keyOrder(a.keys, b.keys) == .less
        }
        var result = rows.map(\.row)
        if grouping.distinctRows {
            var seen = Set<[UInt8]>()
            result = result.filter { seen.insert(Array(Self.normalised($0).jsonString.utf8)).inserted }
        }
        return Array(result.dropFirst(offset).prefix(limit ?? Int.max))
    }

    private static func keyOrder(_ a: [Value], _ b: [Value]) -> DQLComparison {
        for (x, y) in zip(a, b) {
            let c = DQLValueOrder.compare(x, y)
            if c != .equal { return c }
        }
        return .equal
    }

    /// The value with every double that is a whole 64-bit integer written as that integer, so
    /// that values DQL holds equal (`1` and `1.0`) have the same JSON text. Recursion is bounded
    /// by `Value.maximumNestingDepth`, which every stored document respects.
    static func normalised(_ value: Value) -> Value {
        switch value {
        case .double(let d) where d.rounded(.towardZero) == d && d >= -9.2e18 && d <= 9.2e18:
            return .int(Int64(d))
        case .array(let items):
            return .array(items.map(normalised))
        case .object(let fields):
            return .object(fields.mapValues(normalised))
        default:
            return value
        }
    }
}
