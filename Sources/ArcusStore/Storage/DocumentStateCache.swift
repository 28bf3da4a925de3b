import ArcusCRDT
import Synchronization

/// Decoded states of the documents read or written lately, so that the next read of an
/// unchanged row skips decoding it. Sync reads the same documents again and again — a server
/// reads each changed document for every peer it serves, and a merge loads the document it
/// joins into — and decoding a state costs more than the SQL that finds its row.
///
/// An entry is keyed by the document and the change-log position its row was written at: a
/// row never changes without moving to a new position, so a read whose row is at the cached
/// position gets the cached state, and any other position misses. Positions are reused only
/// after a write transaction rolls back, and then the store empties the cache (`removeAll`),
/// since the transaction may have cached states of rows it wrote and took back.
///
/// Bounded by the memory its states take (`Store.Options.stateCacheBytes`, estimated from their
/// cells, values and stored bytes): when full, it drops entries not used since the last time it
/// was full, so memory does not grow with the store.
final class DocumentStateCache: Sendable {
    /// A class, so that a lookup retains one reference, not each of the state's arrays, and
    /// changes the entry in place.
    private final class Entry {
        let sequence: Int64
        /// Nil while a writer has taken it to change (`take`).
        var state: DocumentState?
        let cost: Int
        var used = false
        /// How the row lays out its encoded state, when known (`DocumentRows.append`).
        let layout: StoredLayout?

        init(sequence: Int64, state: DocumentState?, cost: Int, layout: StoredLayout?) {
            self.sequence = sequence
            self.state = state
            self.cost = cost
            self.layout = layout
        }
    }

    private struct Contents {
        var entries: [DocumentKey: Entry] = [:]
        var cost = 0
    }

    private let contents = Mutex(Contents())
    /// The most stored bytes the cached documents may add up to; 0 caches nothing.
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// What the cached states take, as `memory(of:storedBytes:)` estimates it, and how many.
    var usage: (bytes: Int, documents: Int) { contents.withLock { ($0.cost, $0.entries.count) } }

    /// The state of `key` as its row holds it at `sequence`, if cached.
    func state(of key: DocumentKey, at sequence: Int64) -> DocumentState? {
        guard capacity > 0 else { return nil }
        return contents.withLock { contents in
            guard let entry = contents.entries[key], entry.sequence == sequence else { return nil }
            entry.used = true
            return entry.state
        }
    }

    /// The state of `key` as its row holds it at `sequence`, if cached, for a writer that will
    /// change it: the entry keeps its position and layout but lets go of the state, so that the
    /// writer's changes do not copy it. The writer then caches what it wrote (`insert`), or
    /// gives the state back unchanged (`giveBack`).
    func take(of key: DocumentKey, at sequence: Int64) -> DocumentState? {
        guard capacity > 0 else { return nil }
        return contents.withLock { contents in
            guard let entry = contents.entries[key], entry.sequence == sequence, let state = entry.state else { return nil }
            entry.state = nil
            return state
        }
    }

    /// Puts back a state taken (`take`) and left unchanged.
    func giveBack(_ state: DocumentState, of key: DocumentKey) {
        guard capacity > 0 else { return }
        contents.withLock { contents in
            guard let entry = contents.entries[key], entry.state == nil else { return }
            entry.state = state
        }
    }

    /// The position and layout of `key`'s row as last cached, if known. The row may have moved
    /// on since (an older reader's entry): whoever relies on it checks the position.
    func layout(of key: DocumentKey) -> (sequence: Int64, layout: StoredLayout)? {
        guard capacity > 0 else { return nil }
        return contents.withLock { contents in
            guard let entry = contents.entries[key], let layout = entry.layout else { return nil }
            return (entry.sequence, layout)
        }
    }

    /// Remembers the state of `key`'s row at `sequence`; `storedBytes` is the row's size in the
    /// store, `layout` how its state is laid out if known. A document bigger than a quarter of
    /// the capacity is not kept (nor what was cached of it). `taken`: a writer that read the row
    /// to change it keeps the state, as from `take`, and the entry only its place. `evicting`:
    /// false for a state only read, which is kept only if it fits without dropping others.
    /// A backfill reads each document of the log once: evicting for it would churn the whole
    /// cache (and cost the sender of `arcus bench lan` about 8% of its time) for nothing, and
    /// push out the documents written lately, which the next merges and reads want.
    func insert(_ state: DocumentState, of key: DocumentKey, at sequence: Int64, storedBytes: Int, layout: StoredLayout? = nil, taken: Bool = false,
                evicting: Bool = true) {
        guard capacity > 0 else { return }
        let cost = Self.memory(of: state, storedBytes: storedBytes)
        contents.withLock { contents in
            if let old = contents.entries[key] {
                // A reader of an older snapshot must not replace what a later write cached.
                if old.sequence > sequence { return }
                contents.entries[key] = nil
                contents.cost -= old.cost
            }
            guard cost <= capacity / 4, evicting || contents.cost + cost <= capacity else { return }
            if contents.cost + cost > capacity { Self.makeRoom(for: cost, in: &contents, capacity: capacity) }
            contents.entries[key] = Entry(sequence: sequence, state: taken ? nil : state, cost: cost, layout: layout)
            contents.cost += cost
        }
    }

    /// About what a decoded state takes in memory: its arrays, and its strings (about its stored
    /// bytes). A decoded state is several times its stored size: bounding stored bytes let a
    /// 4 MiB cache hold 40 MB (the follower of `arcus bench lan` peaked 40 MB higher).
    static func memory(of state: DocumentState, storedBytes: Int) -> Int {
        let entry = 128  // the dictionary entry, the key, the arrays' headers
        return entry + storedBytes + state.cells.count * MemoryLayout<Cell>.stride
            + state.values.count * MemoryLayout<Value>.stride + state.names.count * MemoryLayout<String>.stride
    }

    /// Forgets everything (after a rollback, whose positions the next writes reuse).
    func removeAll() {
        contents.withLock { $0 = Contents() }
    }

    /// Drops the entries not used since they were cached or last spared (a second chance),
    /// and, if that is not enough, others, until `cost` fits in three quarters of the capacity.
    private static func makeRoom(for cost: Int, in contents: inout Contents, capacity: Int) {
        let target = capacity * 3 / 4 - cost
        // Rebuilt in one pass: removing entries while iterating the dictionary would copy it.
        var kept: [(DocumentKey, Entry)] = []
        kept.reserveCapacity(contents.entries.count)
        var keptCost = 0
        for (key, entry) in contents.entries where entry.used {
            entry.used = false
            kept.append((key, entry))
            keptCost += entry.cost
        }
        var dropped = 0
        while keptCost > target, dropped < kept.count {
            keptCost -= kept[dropped].1.cost
            dropped += 1
        }
        contents.entries = Dictionary(uniqueKeysWithValues: kept[dropped...])
        contents.cost = keptCost
    }
}
