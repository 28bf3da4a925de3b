/// The writer's half of an intern table. An item is sent once in full; afterwards its index.
/// On the wire an index equal to the table's size means "a new item follows". Whether a new item
/// is added is decided by the same rule on both sides (`InternBudget`), so a full table simply
/// stops growing.
struct InternWriter<Item: Hashable & Sendable>: Sendable {
    private var indices: [Item: Int] = [:]
    private(set) var count = 0

    @inline(__always)
    func index(of item: Item) -> Int? { indices[item] }

    mutating func add(_ item: Item) {
        indices[item] = count
        count += 1
    }
}

/// The reader's half: mirrors `InternWriter`.
struct InternReader<Item: Sendable>: Sendable {
    private(set) var items: [Item] = []

    var count: Int { items.count }

    /// Resolves an index read from the wire: an existing item, or nil when a new item follows.
    @inline(__always)
    func resolve(_ index: UInt64, what: String) throws(CodecError) -> Item? {
        if index < UInt64(items.count) { return items[Int(index)] }
        if index == UInt64(items.count) { return nil }
        throw .badReference(what: what, index: index)
    }

    mutating func add(_ item: Item) { items.append(item) }
}

/// How much one direction of a session may intern: a number of items per table and a number of
/// bytes in all. Writer and reader apply it identically.
struct InternBudget: Sendable {
    let maximumItems: Int
    let maximumBytes: Int
    private(set) var bytes = 0

    init(_ limits: CodecLimits) {
        maximumItems = limits.maximumInternedItems
        maximumBytes = limits.maximumInternedBytes
    }

    /// Whether a table of `count` items may take one more of `byteCount` bytes; charges it if so.
    @inline(__always)
    mutating func admit(tableCount count: Int, byteCount: Int) -> Bool {
        guard count < maximumItems, bytes + byteCount <= maximumBytes else { return false }
        bytes += byteCount
        return true
    }
}
