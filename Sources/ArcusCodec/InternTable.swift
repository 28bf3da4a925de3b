import ArcusCRDT

/// The writer's half of an intern table. An item is sent once in full; afterwards its index.
/// On the wire an index equal to the table's size means "a new item follows". Whether a new item
/// is added is decided by the same rule on both sides (`InternBudget`), so a full table simply
/// stops growing.
///
/// Encoders look up every field name, string value and stamp's site: the table is open
/// addressing over `InternKey.internHash`, a few instructions for a short string where
/// `Hasher` costs a hundred or more.
struct InternWriter<Item: InternKey>: Sendable {
    private(set) var items: [Item] = []
    /// Each item's `internHash`, kept so that growing the table rehashes nothing.
    private var hashes: [Int] = []
    /// Item index + 1 per slot, 0 when empty; a power of two in size, at most half full.
    private var slots: [Int32] = []

    var count: Int { items.count }

    @inline(__always)
    func index(of item: Item) -> Int? {
        items.isEmpty ? nil : index(of: item, hash: item.internHash)
    }

    /// `hash` must be `item.internHash`: callers that look an item up more than once hash it once.
    @inline(__always)
    func index(of item: Item, hash: Int) -> Int? {
        guard !items.isEmpty else { return nil }
        let mask = slots.count - 1
        var s = hash & mask
        while true {
            let entry = Int(slots[s])
            if entry == 0 { return nil }
            if hashes[entry - 1] == hash && items[entry - 1] == item { return entry - 1 }
            s = (s + 1) & mask
        }
    }

    /// The item at `index` (below `count`).
    @inline(__always)
    func item(_ index: Int) -> Item { items[index] }

    /// The `internHash` of the item at `index`.
    @inline(__always)
    func hash(_ index: Int) -> Int { hashes[index] }

    /// Adds an item not in the table yet.
    mutating func add(_ item: Item) { add(item, hash: item.internHash) }

    /// Adds an item not in the table yet; `hash` must be `item.internHash`.
    mutating func add(_ item: Item, hash: Int) {
        items.append(item)
        hashes.append(hash)
        if 2 * items.count > slots.count {
            slots = Array(repeating: 0, count: max(16, 2 * slots.count))
            for i in items.indices { place(hashes[i], i) }
        } else {
            place(hash, items.count - 1)
        }
    }

    /// Empties the table, keeping its buffers for the next stream.
    mutating func removeAll() {
        items.removeAll(keepingCapacity: true)
        hashes.removeAll(keepingCapacity: true)
        for i in slots.indices { slots[i] = 0 }
    }

    private mutating func place(_ hash: Int, _ index: Int) {
        let mask = slots.count - 1
        var s = hash & mask
        while slots[s] != 0 { s = (s + 1) & mask }
        slots[s] = Int32(index + 1)
    }
}

/// A key an intern table can hash cheaply.
protocol InternKey: Equatable, Sendable {
    /// A hash with well-mixed low bits, salted per process (the strings may come from peers,
    /// which must not be able to pick colliding ones ahead of time).
    var internHash: Int { get }
}

/// Per-process salt for `InternKey` hashes.
private let internSalt = UInt64.random(in: .min ... .max)

@inline(__always)
private func mix(_ x: UInt64) -> Int {
    // The finalizer of MurmurHash3: every input bit reaches every output bit.
    var h = x
    h ^= h >> 33
    h &*= 0xff51_afd7_ed55_8ccd
    h ^= h >> 33
    h &*= 0xc4ce_b9fe_1a85_ec53
    h ^= h >> 33
    return Int(truncatingIfNeeded: h)
}

extension SiteID: InternKey {
    @inline(__always)
    var internHash: Int { mix(rawValue ^ internSalt) }
}

extension String: InternKey {
    /// Eight bytes at a time over the UTF-8 (field names and interned strings are short).
    var internHash: Int {
        var s = self
        return s.withUTF8 { bytes in
            var h = internSalt ^ UInt64(bytes.count)
            let raw = UnsafeRawBufferPointer(bytes)
            var i = 0
            while i + 8 <= raw.count {
                h = (h ^ raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x9E37_79B9_7F4A_7C15
                h ^= h >> 29
                i += 8
            }
            // The last few bytes in one copy (only this process compares these hashes).
            var tail: UInt64 = 0
            if i < raw.count {
                withUnsafeMutableBytes(of: &tail) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[i...])) }
            }
            return mix(h ^ tail)
        }
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
