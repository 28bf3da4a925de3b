import ArcusCRDT
import GRDB

/// What `EXPLAIN` and `PROFILE` return: a statement's plan as one JSON object, keys in
/// snake_case.
///
/// The plan is what `QueryPlanner` decides for the statement: its `access` path (the primary
/// key, a field index with the values or bounds it looks up, a scan of the collection, a count
/// SQL answers alone, or a `system:` collection's rows), the `filter` every candidate is then
/// checked against in Swift (the WHERE as DQL text, or null when SQL decides exactly), grouping,
/// sort, window and `estimated_rows`: how many documents the access path yields, counted in SQL
/// through the same path (through the index for an index, the live documents for a scan; null
/// for a `system:` collection, whose rows are made only when read).
///
/// EXPLAIN runs nothing and writes nothing, whatever the statement. PROFILE runs its SELECT and
/// adds `actual_rows` (documents read, documents that matched the WHERE, rows returned) and
/// `elapsed_ms`; the SELECT's own rows are not returned.
struct QueryExplanation {
    let executor: QueryExecutor

    private var planner: QueryPlanner { QueryPlanner(db: executor.db, indexes: executor.indexes) }

    func explain(_ statement: DQLStatement) throws -> [String: Value] {
        if !statement.isReadOnly, let collection = statement.collection { try VirtualCollections.checkWritable(collection) }
        switch statement {
        case .select(let select):
            return try plan(of: select)
        case .insert(let insert):
            return ["operation": "insert", "collection": .string(insert.collection), "documents": .int(Int64(insert.documents.count)),
                    "initial": .bool(insert.initial), "on_id_conflict": .string(Self.conflictName(insert.conflict))]
        case .update(let update):
            var plan = try readPlan(operation: "update", update.collection, update.whereClause)
            plan["set"] = .array(update.assignments.map { .string("\(DQLPath($0.path)) = \($0.value)") })
            plan["unset"] = .array(update.unsets.map { .string(DQLPath($0).description) })
            return plan
        case .updateCounter(let update):
            var plan = try readPlan(operation: "update", update.collection, update.whereClause)
            plan["increment"] = .array(update.increments.map { .string("\(DQLPath($0.path)) PN_INCREMENT BY \($0.amount)") })
            return plan
        case .delete(let removal):
            return try readPlan(operation: "delete", removal.collection, removal.whereClause)
        case .evict(let removal):
            return try readPlan(operation: "evict", removal.collection, removal.whereClause)
        case .createIndex(let create):
            return ["operation": "create_index", "index": .string(create.name), "collection": .string(create.collection),
                    "fields": .array(create.paths.map { .string(DQLPath($0).description) }), "if_not_exists": .bool(create.ifNotExists),
                    "exists": .bool(executor.indexes.contains { $0.name == create.name })]
        case .dropIndex(let drop):
            return ["operation": "drop_index", "index": .string(drop.name), "collection": drop.collection.map(Value.string) ?? .null,
                    "if_exists": .bool(drop.ifExists), "exists": .bool(executor.indexes.contains { $0.name == drop.name })]
        case .explain, .profile:
            // The parser refuses EXPLAIN EXPLAIN; a statement built by hand gets the same answer.
            throw StoreError.invalidQuery("EXPLAIN and PROFILE explain a statement, not another EXPLAIN or PROFILE")
        case .settings:
            throw StoreError.invalidQuery("SHOW and ALTER SYSTEM have no plan to explain: run them as they are")
        }
    }

    func profile(_ select: DQLSelect) throws -> [String: Value] {
        var plan = try plan(of: select)
        let counters = QueryCounters()
        var running = executor
        running.counters = counters
        let clock = ContinuousClock()
        let start = clock.now
        let rows = try running.select(select)
        let elapsed = (clock.now - start).components
        plan["actual_rows"] = ["documents_read": .int(Int64(counters.read)), "documents_matched": .int(Int64(counters.matched)),
                               "rows_returned": .int(Int64(rows.count))]
        plan["elapsed_ms"] = .double(Double(elapsed.seconds) * 1000 + Double(elapsed.attoseconds) / 1e15)
        return plan
    }

    // MARK: - Plans

    private func plan(of select: DQLSelect) throws -> [String: Value] {
        let grouping = try DQLGrouping(select)
        // As QueryExecutor.select decides: COUNT(*) alone, or per one GROUP BY field, over a stored collection.
        let countPlan = try grouping.flatMap { try planner.countingPlan(select, $0) }
        var plan: [String: Value]
        if let countPlan {
            plan = ["operation": "select", "collection": .string(select.collection), "access": Self.describe(countPlan.access),
                    "filter": .null, "estimated_rows": try estimate(countPlan)]
        } else {
            plan = try readPlan(operation: "select", select.collection, select.whereClause)
        }
        switch select.projection {
        case .all: plan["projection"] = "*"
        case .items(let items):
            plan["projection"] = .array(items.map { item in
                .string(item.alias.map { "\(item.expression) AS \(DQLPath.quotedName($0, first: false))" } ?? item.expression.description)
            })
        }
        plan["distinct"] = .bool(select.distinct)
        if let grouping {
            plan["group_by"] = .array(grouping.keys.map { .string($0.description) })
            plan["aggregates"] = .array(grouping.aggregates.map { aggregate in
                .string(DQLExpression.call(aggregate.function, aggregate.argument.map { [$0] } ?? [], position: .start).description)
            })
            plan["having"] = select.having.map { .string($0.description) } ?? .null
            plan["counted_without_reading_documents"] = .bool(countPlan != nil)
        }
        plan["order_by"] = .array(select.orderBy.map { ["expression": .string($0.expression.description), "descending": .bool($0.descending)] })
        plan["offset"] = try select.offset.map { .int(Int64(try $0.resolve(arguments: [:]))) } ?? .null
        plan["limit"] = try select.limit.map { .int(Int64(try $0.resolve(arguments: [:]))) } ?? .null
        return plan
    }

    /// The part every statement that reads documents shares: how `condition`'s candidates in
    /// `collection` are found, what is left to check, and how many candidates to expect.
    private func readPlan(operation: String, _ collection: String, _ condition: DQLExpression?) throws -> [String: Value] {
        var plan: [String: Value] = ["operation": .string(operation), "collection": .string(collection),
                                     "filter": condition.map { .string($0.description) } ?? .null]
        if VirtualCollections.isVirtual(collection) {
            plan["access"] = ["type": "system_collection"]
            plan["estimated_rows"] = .null
        } else {
            let chosen = try planner.plan(collection: collection, where: condition)
            plan["access"] = Self.describe(chosen.access)
            plan["estimated_rows"] = try estimate(chosen)
        }
        return plan
    }

    private func estimate(_ plan: QueryPlanner.Plan) throws -> Value {
        .int(try Int64.fetchOne(executor.db.cachedStatement(sql: plan.countSQL), arguments: plan.arguments) ?? 0)
    }

    private static func describe(_ access: QueryPlanner.Access) -> Value {
        func index(_ index: FieldIndex, _ type: String, _ path: FieldPath) -> [String: Value] {
            ["type": .string(type), "index": .string(index.name), "index_fields": .array(index.paths.map { .string(DQLPath($0).description) }),
             "field": .string(DQLPath(path).description)]
        }
        switch access {
        case .byID(let ids):
            return ["type": "primary_key", "ids": .array(ids)]
        case .indexEquality(let fieldIndex, let path, let values):
            var described = index(fieldIndex, "index", path)
            described["lookup"] = "equality"
            described["values"] = .array(values)
            return .object(described)
        case .indexRange(let fieldIndex, let path, let bounds):
            var described = index(fieldIndex, "index", path)
            described["lookup"] = "range"
            described["bounds"] = .array(bounds.map { ["op": .string($0.0), "value": $0.1] })
            return .object(described)
        case .scan:
            return ["type": "scan"]
        case .countCollection:
            return ["type": "count_of_collection"]
        case .countByIndex(let fieldIndex, let path, let values):
            var described = index(fieldIndex, "index_count", path)
            described["values"] = .array(values)
            return .object(described)
        case .countNothing:
            return ["type": "nothing", "reason": "the condition can match no document (= NULL or an empty IN list)"]
        case .countPerField(let key, let within):
            return ["type": "count_per_field", "field": .string(DQLPath(key).description), "within": describe(within)]
        }
    }

    private static func conflictName(_ policy: DQLConflictPolicy) -> String {
        switch policy {
        case .fail: return "fail"
        case .doUpdate: return "do_update"
        case .doNothing: return "do_nothing"
        case .doUpdateLocalDiff: return "do_update_local_diff"
        }
    }
}

/// What a PROFILE counts while its SELECT runs. A class so that the executor, a value passed
/// down the read, can count into it; it lives within one read and is never shared.
final class QueryCounters {
    /// Documents (or `system:` rows) the access path yielded.
    var read = 0
    /// Of those, the ones the WHERE matched (or that SQL counted, for a count).
    var matched = 0
}
