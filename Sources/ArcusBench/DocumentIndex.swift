import ArcusAgent
import ArcusCRDT

/// Finds a replica's document by key without `Hasher`: string ids (all of them in the traces)
/// go in an open-addressing table hashed by a multiply-xor over the UTF-8 bytes, which costs a
/// few instructions per byte; other ids fall back to a dictionary.
struct DocumentIndex {
    /// Document index + 1 per slot; 0 is empty. The size is a power of two, at most half full.
    private var slots: [Int32] = Array(repeating: 0, count: 64)
    private var count = 0
    private var others: [DocumentKey: Int] = [:]

    /// The document with `key`, looked up among `keys` (the replica's keys by document index).
    @inline(__always)
    func find(_ key: DocumentKey, in keys: [DocumentKey]) -> Int? {
        guard case .string(let id) = key.id else { return others[key] }
        let mask = slots.count - 1
        var s = Self.hash(key.collection, id) & mask
        while true {
            let entry = Int(slots[s])
            if entry == 0 { return nil }
            if keys[entry - 1] == key { return entry - 1 }
            s = (s + 1) & mask
        }
    }

    /// Records that `key` (not present yet) names document `document`.
    mutating func insert(_ key: DocumentKey, document: Int, keys: [DocumentKey]) {
        guard case .string(let id) = key.id else {
            others[key] = document
            return
        }
        if 2 * (count + 1) > slots.count { grow(keys) }
        place(Self.hash(key.collection, id), document)
        count += 1
    }

    private mutating func place(_ hash: Int, _ document: Int) {
        let mask = slots.count - 1
        var s = hash & mask
        while slots[s] != 0 { s = (s + 1) & mask }
        slots[s] = Int32(document + 1)
    }

    private mutating func grow(_ keys: [DocumentKey]) {
        let old = slots
        slots = Array(repeating: 0, count: old.count * 2)
        for entry in old where entry != 0 {
            guard case .string(let id) = keys[Int(entry) - 1].id else { continue }
            place(Self.hash(keys[Int(entry) - 1].collection, id), Int(entry) - 1)
        }
    }

    @inline(__always)
    private static func hash(_ collection: String, _ id: String) -> Int {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        var c = collection, i = id
        c.withUTF8 { for byte in $0 { h = (h ^ UInt64(byte)) &* 0x100_0000_01b3 } }
        h = (h ^ 0xFF) &* 0x100_0000_01b3
        i.withUTF8 { for byte in $0 { h = (h ^ UInt64(byte)) &* 0x100_0000_01b3 } }
        // Fold the high bits in: the low bits of an FNV product alone mix poorly.
        return Int(truncatingIfNeeded: h ^ (h >> 29))
    }
}
