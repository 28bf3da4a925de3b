import ArcusCRDT

/// The field names of the documents one batch writes, numbered in the order first met.
///
/// Each name is looked up in the session once per batch instead of once per field: the cells
/// being written (copies) have their field cells renumbered to these ids, and the writer finds
/// a name's session index in `session`.
struct BatchNames {
    private var lookup = InternWriter<String>()
    /// How many field cells use each name.
    private(set) var uses: [Int] = []
    /// Each name's index in the session's field-name table, or -1 while it has none.
    var session: [Int] = []

    var count: Int { lookup.count }

    @inline(__always)
    func name(_ id: Int) -> String { lookup.item(id) }

    /// The `internHash` of name `id`, for looking it up in (or adding it to) a session's table.
    @inline(__always)
    func hash(_ id: Int) -> Int { lookup.hash(id) }

    /// Forgets every name, keeping the buffers for the next batch.
    mutating func removeAll() {
        lookup.removeAll()
        uses.removeAll(keepingCapacity: true)
        session.removeAll(keepingCapacity: true)
    }

    /// Renumbers the field cells of `cells[range]`, whose indices point into `table`, to ids.
    mutating func number(_ cells: inout [Cell], _ range: Range<Int>, from table: [String]) {
        for i in range where cells[i].kind == .field {
            let name = table[Int(cells[i].index)]
            let hash = name.internHash
            let id: Int
            if let known = lookup.index(of: name, hash: hash) {
                id = known
            } else {
                id = lookup.count
                lookup.add(name, hash: hash)
                uses.append(0)
                session.append(-1)
            }
            uses[id] += 1
            cells[i].index = UInt32(id)
        }
    }
}
