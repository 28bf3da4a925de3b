import ArcusCRDT

/// The distinct stamps of a document's cells, ascending: entries name stamps by their index.
/// Built into buffers the writer reuses, and read through pointers.
struct StampTable {
    /// Ascending, distinct.
    let stamps: UnsafeBufferPointer<Stamp>
    /// Version-vector entries of the sent knowledge that the sent events do not imply.
    let extra: UnsafeBufferPointer<Stamp>

    /// Fills `stamps` and `extra` for `cells`; `knowledge` is the state's version, less what
    /// `since` covers.
    static func build(_ cells: UnsafeBufferPointer<Cell>, knowledge: VersionVector, since: VersionVector?, stamps: inout [Stamp], extra: inout [Stamp]) {
        // A document's cells share a few stamps: collect the distinct ones by a short scan,
        // then sort that short list.
        stamps.removeAll(keepingCapacity: true)
        extra.removeAll(keepingCapacity: true)
        for cell in cells where cell.kind != .field {
            insert(cell.order, into: &stamps)
            if cell.event != cell.order { insert(cell.event, into: &stamps) }
        }
        // Knowledge beyond the events written (an overwritten or removed write's event) goes in
        // the table too, so the receiver's version vector ends up the same as the sender's.
        knowledge.elements.withUnsafeBufferPointer { elements in
            for element in elements {
                let known = Stamp(time: element.time, site: element.site)
                if let since, since.contains(known) { continue }
                var implied = false
                for cell in cells where cell.kind != .field && cell.event.site == known.site && cell.event.time >= known.time {
                    implied = true
                    break
                }
                if !implied {
                    extra.append(known)
                    insert(known, into: &stamps)
                }
            }
        }
        if stamps.count > 1 { stamps.sort() }
        if stamps.count > scanLimit {
            // Past the scan limit `insert` appended without checking: drop the repeats.
            var unique = 1
            for i in 1..<stamps.count where stamps[i] != stamps[unique - 1] {
                stamps[unique] = stamps[i]
                unique += 1
            }
            stamps.removeLast(stamps.count - unique)
        }
    }

    private static let scanLimit = 32

    @inline(__always)
    private static func insert(_ stamp: Stamp, into distinct: inout [Stamp]) {
        if distinct.count <= scanLimit {
            for existing in distinct where existing == stamp { return }
        }
        distinct.append(stamp)
    }

    /// The index of a stamp in the table (it must be there).
    @inline(__always)
    func index(_ stamp: Stamp) -> Int {
        // Few stamps per document: a scan beats a search.
        if stamps.count <= 16 {
            var i = 0
            while i < stamps.count && stamps[i] != stamp { i += 1 }
            precondition(i < stamps.count, "a stamp missing from the document's table")
            return i
        }
        var low = 0, high = stamps.count
        while low < high {
            let mid = (low + high) >> 1
            if stamps[mid] < stamp { low = mid + 1 } else { high = mid }
        }
        precondition(low < stamps.count && stamps[low] == stamp, "a stamp missing from the document's table")
        return low
    }
}
