/// Dropping side-table entries no cell uses: slots emptied by removals or left by kind changes,
/// and what a state adopted from a decoded batch's shared tables.
extension DocumentState {
    /// Whether a cell's `index` points into `values`.
    @inline(__always)
    static func holdsValue(_ cell: Cell) -> Bool {
        cell.kind == .contribution || cell.kind == .baseline || (cell.kind == .register && cell.flag == .value)
    }

    /// Rebuilds a table once more than half of it is unused.
    mutating func compactIfWasteful() {
        // At most one slot per cell is in use: below this, nothing to count.
        if values.count > 2 * cells.count + 16 {
            var used = 0
            for cell in cells where Self.holdsValue(cell) { used += 1 }
            if values.count > 2 * used + 16 {
                var compact: [Value] = []
                compact.reserveCapacity(used)
                for i in cells.indices where Self.holdsValue(cells[i]) {
                    compact.append(values[Int(cells[i].index)])
                    cells[i].index = UInt32(compact.count - 1)
                }
                values = compact
            }
        }
        if attachments.count > 2 * cells.count + 8 {
            var compact: [AttachmentToken] = []
            for i in cells.indices where cells[i].kind == .register && cells[i].flag == .attachment {
                compact.append(attachments[Int(cells[i].index)])
                cells[i].index = UInt32(compact.count - 1)
            }
            attachments = compact
        }
    }

    /// Drops names no field cell uses (left by adopting a batch's shared table).
    mutating func compactNamesIfWasteful() {
        guard names.count > cells.count + 8 else { return }
        var compact: [String] = []
        var map = [UInt32](repeating: .max, count: names.count)
        for i in cells.indices where cells[i].kind == .field {
            let old = Int(cells[i].index)
            if map[old] == .max {
                compact.append(names[old])
                map[old] = UInt32(compact.count - 1)
            }
            cells[i].index = map[old]
        }
        names = compact
    }
}
