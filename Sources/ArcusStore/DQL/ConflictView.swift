import ArcusCRDT

/// The kept losers of one collection's documents (see `FieldConflicts`), as `conflicts(path)`
/// reads them: per document `_id` (its JSON) and field path, oldest first, each an object
/// `{"value": …, "site": "<16 hex digits>", "written_at": "<ISO 8601>"}`.
public struct ConflictView: Sendable {
    var losers: [String: [FieldPath: [Value]]] = [:]

    public init() {}

    /// The kept losers at `path` of the document `id`; empty when there are none.
    public func losers(of id: Value, at path: FieldPath) -> [Value] {
        losers[id.jsonString]?[path] ?? []
    }

    mutating func add(_ loser: Value, of id: Value, at path: FieldPath) {
        losers[id.jsonString, default: [:]][path, default: []].append(loser)
    }
}

extension DQLEvaluator {
    /// `conflicts(path)`: an array, empty when the field has no kept loser (or the document no
    /// `_id`). The parser made sure the argument is a field path.
    func conflicts(_ arguments: [DQLExpression], _ doc: Value, at position: DQLSourcePosition) throws(DQLError) -> Value {
        guard let conflicts else {
            throw DQLError(.invalidStatement, "conflicts() reads this store's conflict view: use it in a statement run by execute, not in an observer or a subscription", at: position)
        }
        guard case .path(let path)? = arguments.first, let fieldPath = path.fieldPath else {
            throw DQLError(.invalidArgument, "conflicts takes a field path, such as conflicts(color)", at: position)
        }
        guard let id = doc[path: ["_id"]] else { return .array([]) }
        return .array(conflicts.losers(of: id, at: fieldPath))
    }
}
