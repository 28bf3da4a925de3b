import ArcusCRDT

/// The result of a SELECT kept up to date from commits: every matching document in result
/// order (ORDER BY terms, then `_id`), and the window OFFSET/LIMIT cut from it.
///
/// A commit costs work in proportion to the documents it changed, not to the collection: each
/// changed document is evaluated against the WHERE clause and moved to its place by binary
/// search. The diff is computed from the changed documents' old and new places.
///
/// A grouped SELECT (aggregates, GROUP BY, DISTINCT) keeps its matching documents the same way,
/// in `_id` order, and recomputes its rows from them after a commit that changed a document
/// that matched or now matches: no store reads, but work in proportion to the matching
/// documents. Its diff is by row position.
struct LiveQuery {
    let select: DQLSelect
    private let evaluator = DQLEvaluator()
    private let grouping: DQLGrouping?
    /// How documents are ordered: the SELECT's ORDER BY, or none when it orders rows of groups.
    private let documentOrder: [DQLOrderTerm]
    private let offset: Int
    private let limit: Int?
    /// Matching documents in result order, with their sort keys.
    private var ordered: [Entry] = []
    /// The same entries by `_id`, to find a changed document's old place.
    private var byID: [String: Entry] = [:]
    private var window: Range<Int> = 0..<0

    struct Entry {
        var id: String
        var keys: [Value?]
        var document: Value
    }

    init(_ select: DQLSelect, documents: [Value]) throws {
        self.select = select
        grouping = try DQLGrouping(select)
        documentOrder = grouping == nil ? select.orderBy : []
        // A grouped query cuts its window from the rows, not from the documents.
        offset = try grouping == nil ? (select.offset?.resolve(arguments: [:]) ?? 0) : 0
        limit = try grouping == nil ? select.limit?.resolve(arguments: [:]) : nil
        ordered = try documents.map(entry)
        ordered.sort(by: precedes)
        for entry in ordered { byID[entry.id] = entry }
        window = currentWindow
        groupedRows = try groupRows()
    }

    /// A grouped query's rows, recomputed from `ordered` after each commit that touched it.
    private var groupedRows: [Value] = []

    private func groupRows() throws -> [Value] {
        guard let grouping else { return [] }
        var table = DQLGroupTable(grouping)
        for entry in ordered { try table.add(entry.document) }
        return try table.rows(offset: try select.offset?.resolve(arguments: [:]) ?? 0, limit: try select.limit?.resolve(arguments: [:]))
    }

    var collection: String { select.collection }

    /// The projected items of the current window.
    func items() throws -> [Value] {
        if grouping != nil { return groupedRows }

        let documents = ordered[window].map(\.document)
        guard case .items = select.projection else { return documents }
        return try documents.map { try evaluator.project(select.projection, document: $0) }
    }

    private var currentWindow: Range<Int> {
        let start = min(offset, ordered.count)
        let end = limit.map { min(start + $0, ordered.count) } ?? ordered.count
        return start..<end
    }

    private func entry(_ document: Value) throws -> Entry {
        Entry(id: document[path: ["_id"]]?.jsonString ?? "", keys: try evaluator.sortKeys(documentOrder, document: document), document: document)
    }

    private func precedes(_ a: Entry, _ b: Entry) -> Bool {
        if !documentOrder.isEmpty {
            if DQLEvaluator.precedes(a.keys, b.keys, orderBy: documentOrder) { return true }
            if DQLEvaluator.precedes(b.keys, a.keys, orderBy: documentOrder) { return false }
        }
        return a.id < b.id
    }

    /// Where `entry` sits (or would sit) in `ordered`.
    private func position(of entry: Entry) -> Int {
        var low = 0, high = ordered.count
        while low < high {
            let mid = (low + high) / 2
            if precedes(ordered[mid], entry) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Applies the changes of one commit; returns the diff of the window, or nil when the window
    /// did not change.
    mutating func apply(_ changes: [DocumentChange]) throws -> ResultDiff? {
        guard grouping != nil else { return try applyToDocuments(changes) }
        let affected = try changes.contains { change in
            guard change.key.collection == collection else { return false }
            if byID[change.key.storageID] != nil { return true }
            guard let value = change.value else { return false }
            return try evaluator.matches(select.whereClause, document: value)
        }
        guard affected else { return nil }
        let before = groupedRows
        _ = try applyToDocuments(changes)
        let after = try groupRows()
        groupedRows = after
        guard before != after else { return nil }
        // Rows of groups have no identity of their own: row i before is row i after.
        func positional(_ rows: [Value]) -> [(String, Value)] { rows.enumerated().map { (String($0), $1) } }
        return ResultDiff(before: positional(before), after: positional(after), touched: [])
    }

    private mutating func applyToDocuments(_ changes: [DocumentChange]) throws -> ResultDiff? {
        let before = ordered[window].map { ($0.id, $0.document) }
        var touched = Set<String>()
        for change in changes where change.key.collection == collection {
            let id = change.key.storageID
            touched.insert(id)
            if let old = byID.removeValue(forKey: id) {
                let at = position(of: old)
                if at < ordered.count, ordered[at].id == id { ordered.remove(at: at) }
            }
            if let value = change.value, try evaluator.matches(select.whereClause, document: value) {
                let new = try entry(value)
                ordered.insert(new, at: position(of: new))
                byID[id] = new
            }
        }
        guard !touched.isEmpty else { return nil }
        window = currentWindow
        let after = ordered[window]
        if before.count == after.count && zip(before, after).allSatisfy({ $0.0 == $1.id && $0.1 == $1.document }) { return nil }
        return ResultDiff(before: before, after: after.map { ($0.id, $0.document) }, touched: touched)
    }

}

/// How a result changed: indices of inserted items (in the new result), deleted items (in the
/// old), updated items (in the new) and moved items (old → new).
public struct ResultDiff: Sendable, Hashable {
    public var insertions: [Int] = []
    public var deletions: [Int] = []
    public var updates: [Int] = []
    public var moves: [Move] = []

    public struct Move: Sendable, Hashable {
        public var from: Int
        public var to: Int
    }

    public init() {}

    public var isEmpty: Bool { insertions.isEmpty && deletions.isEmpty && updates.isEmpty && moves.isEmpty }

    init(before: [(String, Value)], after: [(String, Value)], touched: Set<String>) {
        var oldIndex: [String: Int] = [:]
        for (i, item) in before.enumerated() { oldIndex[item.0] = i }
        var newIndex: [String: Int] = [:]
        for (i, item) in after.enumerated() { newIndex[item.0] = i }
        for (i, item) in before.enumerated() where newIndex[item.0] == nil { deletions.append(i) }
        for (i, item) in after.enumerated() {
            guard let old = oldIndex[item.0] else {
                insertions.append(i)
                continue
            }
            if before[old].1 != item.1 { updates.append(i) }
        }
        // A move: a surviving item whose order relative to the other survivors changed.
        let survivors = after.enumerated().compactMap { i, item in oldIndex[item.0].map { (old: $0, new: i) } }
        let oldRank = Dictionary(uniqueKeysWithValues: survivors.sorted { $0.old < $1.old }.enumerated().map { ($1.old, $0) })
        for (rank, survivor) in survivors.enumerated() where oldRank[survivor.old] != rank && touched.contains(after[survivor.new].0) {
            moves.append(Move(from: survivor.old, to: survivor.new))
        }
    }
}
