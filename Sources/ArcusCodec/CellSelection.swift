import ArcusCRDT

extension DocumentState {
    /// Appends the cells (a state's) whose event `since` does not cover, with the field cells
    /// that lead to them, in pre-order: the layout of `changes(since:)`, indexing the state's
    /// tables. One pass with a stack of the fields open above the current cell; `open` is
    /// scratch space.
    static func appendCells(_ cells: UnsafeBufferPointer<Cell>, since: VersionVector, to selected: inout [Cell], open: inout [OpenField]) {
        // Fields open at once have distinct depths, and depths are bytes.
        if open.count < 256 { open = Array(repeating: OpenField(index: 0, depth: 0, written: false), count: 256) }
        open.withUnsafeMutableBufferPointer { open in
            since.elements.withUnsafeBufferPointer { known in
                var top = 0
                // The coverage of the last site looked up: a document's events come from a few
                // sites, so most cells hit it.
                var cachedSite = cells.first?.event.site ?? SiteID(0)
                var cachedLimit = Self.limit(of: cachedSite, in: known)
                for i in cells.indices {
                    let cell = cells[i]
                    if cell.kind == .field {
                        while top > 0 && open[top - 1].depth >= cell.depth { top -= 1 }
                        open[top] = OpenField(index: i, depth: cell.depth, written: false)
                        top += 1
                        continue
                    }
                    if cell.event.site != cachedSite {
                        cachedSite = cell.event.site
                        cachedLimit = Self.limit(of: cachedSite, in: known)
                    }
                    if let limit = cachedLimit, cell.event.time <= limit { continue }
                    // Selected: first the open fields above it not written yet, outermost first.
                    var first = top
                    while first > 0 && !open[first - 1].written { first -= 1 }
                    for k in first..<top {
                        selected.append(cells[open[k].index])
                        open[k].written = true
                    }
                    selected.append(cell)
                }
            }
        }
    }

    /// The latest time of `site` that `known` covers, if any.
    @inline(__always)
    private static func limit(of site: SiteID, in known: UnsafeBufferPointer<VersionVector.Element>) -> Timestamp? {
        for element in known where element.site == site { return element.time }
        return nil
    }

    /// A field whose subtree `appendCells` is reading; written out once a cell under it is selected.
    struct OpenField {
        var index: Int
        var depth: UInt8
        var written: Bool
    }
}
