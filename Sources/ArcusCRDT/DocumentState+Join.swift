/// Joining two flat states: one merge pass over both trees in pre-order, field names matched
/// level by level. Cells of `self` keep their indices into `self`'s tables; cells taken from
/// `other` get their name and payload copied across.
extension DocumentState {
    /// Merges `other` (a whole state or a delta) into this state.
    public mutating func join(_ other: DocumentState) {
        version.formUnion(other.version)
        guard !other.cells.isEmpty else { return }
        if cells.isEmpty {
            let version = self.version
            self = other
            self.version = version
            // A decoded delta may share its tables with a whole batch: keep only ours.
            compactIfWasteful()
            compactNamesIfWasteful()
            return
        }
        if joinInPlace(other) { return }
        // The tables move into the merge (so appending to them does not copy them); `self`'s
        // cells keep their indices, since the merge only appends.
        var merge = Merge(aCells: cells, b: other, names: names, values: values, attachments: attachments)
        names = []
        values = []
        attachments = []
        merge.mergeMap(0..<merge.aCells.count, 0..<other.cells.count, depth: 0)
        cells = merge.out
        names = merge.names
        values = merge.values
        attachments = merge.attachments
        compactIfWasteful(force: merge.removedPayload)
    }

    /// The common delta only touches cells this state already has (a register overwritten, a
    /// contribution advanced): then each of its cells replaces its counterpart where it wins,
    /// without rebuilding the layout. Returns false, changing nothing, when `other` has a cell
    /// with no counterpart here.
    private mutating func joinInPlace(_ other: DocumentState) -> Bool {
        withUnsafeTemporaryAllocation(of: Int.self, capacity: other.cells.count) { buffer in
            var targets = TargetList(buffer)
            guard Self.match(other.cells, 0..<other.cells.count, other.names, into: cells, 0..<cells.count, names, &targets) else {
                return false
            }
            apply(other, targets.filled)
            return true
        }
    }

    /// Counterpart indices found by `match`, in a buffer that lives on the stack.
    private struct TargetList {
        let buffer: UnsafeMutableBufferPointer<Int>
        var count = 0
        init(_ buffer: UnsafeMutableBufferPointer<Int>) { self.buffer = buffer }
        mutating func append(_ index: Int) {
            buffer[count] = index
            count += 1
        }
        var filled: UnsafeMutableBufferPointer<Int>.SubSequence { buffer[0..<count] }
    }

    private mutating func apply(_ other: DocumentState, _ targets: UnsafeMutableBufferPointer<Int>.SubSequence) {
        var removedPayload = false
        for (k, target) in zip(0..., targets) where target >= 0 {
            var incoming = other.cells[k]
            let current = cells[target]
            let wins: Bool
            switch incoming.kind {
            case .field: continue
            case .marker, .register: wins = Self.precedes(current, incoming)
            case .contribution: wins = current.order < incoming.order
            case .baseline: wins = current.order != incoming.order ? current.order < incoming.order : current.event < incoming.event
            }
            guard wins else { continue }
            if incoming.isRemoved && current.kind == .register && current.flag != .removed { removedPayload = true }
            switch incoming.kind {
            case .register where incoming.flag == .value, .contribution, .baseline:
                values.append(other.values[Int(incoming.index)])
                incoming.index = UInt32(values.count - 1)
            case .register where incoming.flag == .attachment:
                attachments.append(other.attachments[Int(incoming.index)])
                incoming.index = UInt32(attachments.count - 1)
            default: break
            }
            cells[target] = incoming
        }
        compactIfWasteful(force: removedPayload)
    }

    /// For each cell of `b` in `br` (a map), the index of its counterpart in `a` (or -1 for
    /// field cells); false when one has none.
    private static func match(
        _ b: [Cell], _ br: Range<Int>, _ bNames: [String],
        into a: [Cell], _ ar: Range<Int>, _ aNames: [String], _ targets: inout TargetList
    ) -> Bool {
        var i = ar.lowerBound, j = br.lowerBound
        if j < br.upperBound, b[j].kind == .marker {
            guard i < ar.upperBound, a[i].kind == .marker else { return false }
            targets.append(i)
            j += 1
        }
        if i < ar.upperBound, a[i].kind == .marker { i += 1 }
        while j < br.upperBound {
            let name = bNames[Int(b[j].index)]
            // Both sides list fields in name order: walk forward to the same name.
            while i < ar.upperBound, aNames[Int(a[i].index)] < name { i = span(in: a, ofFieldAt: i).end }
            guard i < ar.upperBound, aNames[Int(a[i].index)] == name else { return false }
            let sa = span(in: a, ofFieldAt: i), sb = span(in: b, ofFieldAt: j)
            targets.append(-1)
            if let r = sb.register {
                guard let target = sa.register else { return false }
                _ = r
                targets.append(target)
            }
            for k in sb.counter {
                var found = -1
                for m in sa.counter where a[m].kind == b[k].kind && a[m].order.site == b[k].order.site {
                    found = m
                    break
                }
                guard found >= 0 else { return false }
                targets.append(found)
            }
            if !sb.nested.isEmpty {
                guard !sa.nested.isEmpty, match(b, sb.nested, bNames, into: a, sa.nested, aNames, &targets) else { return false }
            }
            i = sa.end
            j = sb.end
        }
        return true
    }

    /// The entry join order: `order`, then a removal over the value it removed, then `event`.
    @inline(__always)
    static func precedes(_ x: Cell, _ y: Cell) -> Bool {
        if x.order != y.order { return x.order < y.order }
        if x.isRemoved != y.isRemoved { return y.isRemoved }
        return x.event < y.event
    }

    /// Drops names no field cell uses (left by adopting a batch's shared table).
    mutating func compactNamesIfWasteful() {
        guard names.count > cells.count + 8 else { return }
        var compact: [String] = []
        var map: [UInt32: UInt32] = [:]
        for i in cells.indices where cells[i].kind == .field {
            let old = cells[i].index
            if let new = map[old] {
                cells[i].index = new
            } else {
                compact.append(names[Int(old)])
                map[old] = UInt32(compact.count - 1)
                cells[i].index = UInt32(compact.count - 1)
            }
        }
        names = compact
    }

    /// Overwritten payloads stay in the side tables until more than half of them is garbage; a
    /// removal (`force`) drops them at once, so a removed value is not kept even in memory.
    mutating func compactIfWasteful(force: Bool = false) {
        // At most one value per cell is referenced: below this, nothing to count.
        guard force || values.count > 2 * cells.count + 16 else { return }
        var referenced = 0
        for cell in cells where cell.kind == .contribution || cell.kind == .baseline || (cell.kind == .register && cell.flag == .value) {
            referenced += 1
        }
        if force && !attachments.isEmpty {
            var compactAttachments: [AttachmentToken] = []
            for i in cells.indices where cells[i].kind == .register && cells[i].flag == .attachment {
                compactAttachments.append(attachments[Int(cells[i].index)])
                cells[i].index = UInt32(compactAttachments.count - 1)
            }
            attachments = compactAttachments
        }
        guard force ? values.count > referenced : values.count > 2 * referenced + 16 else { return }
        var compact: [Value] = []
        compact.reserveCapacity(referenced)
        for i in cells.indices where cells[i].kind == .contribution || cells[i].kind == .baseline || (cells[i].kind == .register && cells[i].flag == .value) {
            compact.append(values[Int(cells[i].index)])
            cells[i].index = UInt32(compact.count - 1)
        }
        values = compact
    }

    private struct Merge {
        let aCells: [Cell]
        let bCells: [Cell]
        let bNames: [String]
        let bValues: [Value]
        let bAttachments: [AttachmentToken]
        var out: [Cell] = []
        /// `self`'s tables, growing with what is taken from `b`.
        var names: [String]
        var values: [Value]
        var attachments: [AttachmentToken]
        /// Whether a removal replaced a payload (which then must not stay in the tables).
        var removedPayload = false
        /// `b`'s name index → index in `names`, filled on first use.
        var nameMap: [UInt32]

        init(aCells: [Cell], b: DocumentState, names: [String], values: [Value], attachments: [AttachmentToken]) {
            self.aCells = aCells
            bCells = b.cells
            bNames = b.names
            bValues = b.values
            bAttachments = b.attachments
            self.names = names
            self.values = values
            self.attachments = attachments
            nameMap = Array(repeating: .max, count: b.names.count)
            out.reserveCapacity(aCells.count + b.cells.count)
        }

        mutating func mergeMap(_ ar: Range<Int>, _ br: Range<Int>, depth: UInt8) {
            var i = ar.lowerBound, j = br.lowerBound
            let am = i < ar.upperBound && aCells[i].kind == .marker
            let bm = j < br.upperBound && bCells[j].kind == .marker
            if am && bm {
                if Self.precedes(aCells[i], bCells[j]) { takeB(j) } else { out.append(aCells[i]) }
            } else if am {
                out.append(aCells[i])
            } else if bm {
                takeB(j)
            }
            if am { i += 1 }
            if bm { j += 1 }
            while i < ar.upperBound || j < br.upperBound {
                if j >= br.upperBound {
                    let end = DocumentState.span(in: aCells, ofFieldAt: i).end
                    out.append(contentsOf: aCells[i..<end])
                    i = end
                    continue
                }
                if i >= ar.upperBound {
                    let end = DocumentState.span(in: bCells, ofFieldAt: j).end
                    for k in j..<end { takeB(k) }
                    j = end
                    continue
                }
                let aName = names[Int(aCells[i].index)]
                let bName = bNames[Int(bCells[j].index)]
                if aName < bName {
                    let end = DocumentState.span(in: aCells, ofFieldAt: i).end
                    out.append(contentsOf: aCells[i..<end])
                    i = end
                } else if bName < aName {
                    let end = DocumentState.span(in: bCells, ofFieldAt: j).end
                    for k in j..<end { takeB(k) }
                    j = end
                } else {
                    let sa = DocumentState.span(in: aCells, ofFieldAt: i), sb = DocumentState.span(in: bCells, ofFieldAt: j)
                    mergeField(sa, sb, depth: depth)
                    i = sa.end
                    j = sb.end
                }
            }
        }

        private mutating func mergeField(_ sa: FieldSpan, _ sb: FieldSpan, depth: UInt8) {
            out.append(aCells[sa.field])
            switch (sa.register, sb.register) {
            case let (x?, y?):
                if Self.precedes(aCells[x], bCells[y]) {
                    if bCells[y].isRemoved && !aCells[x].isRemoved { removedPayload = true }
                    takeB(y)
                } else {
                    out.append(aCells[x])
                }
            case let (x?, nil): out.append(aCells[x])
            case let (nil, y?): takeB(y)
            case (nil, nil): break
            }
            mergeCounter(sa.counter, sb.counter, kind: .contribution)
            mergeCounter(sa.counter, sb.counter, kind: .baseline)
            mergeMap(sa.nested, sb.nested, depth: depth + 1)
        }

        /// Contributions (or baselines) of both sides, in site order: per site the later one.
        private mutating func mergeCounter(_ ar: Range<Int>, _ br: Range<Int>, kind: Cell.Kind) {
            var i = ar.lowerBound, j = br.lowerBound
            while i < ar.upperBound && aCells[i].kind != kind { i += 1 }
            while j < br.upperBound && bCells[j].kind != kind { j += 1 }
            while true {
                let aHas = i < ar.upperBound && aCells[i].kind == kind
                let bHas = j < br.upperBound && bCells[j].kind == kind
                if !aHas && !bHas { return }
                if aHas && (!bHas || aCells[i].order.site < bCells[j].order.site) {
                    out.append(aCells[i])
                    i += 1
                } else if bHas && (!aHas || bCells[j].order.site < aCells[i].order.site) {
                    takeB(j)
                    j += 1
                } else {
                    let x = aCells[i], y = bCells[j]
                    let bWins = x.order != y.order ? x.order < y.order : x.event < y.event
                    if bWins { takeB(j) } else { out.append(x) }
                    i += 1
                    j += 1
                }
            }
        }

        /// Appends a cell of `b`, copying its name or payload into this side's tables.
        private mutating func takeB(_ k: Int) {
            var cell = bCells[k]
            switch cell.kind {
            case .field:
                let bIndex = Int(cell.index)
                if nameMap[bIndex] == .max {
                    let name = bNames[bIndex]
                    if let existing = names.firstIndex(of: name) {
                        nameMap[bIndex] = UInt32(existing)
                    } else {
                        names.append(name)
                        nameMap[bIndex] = UInt32(names.count - 1)
                    }
                }
                cell.index = nameMap[bIndex]
            case .marker:
                break
            case .register:
                switch cell.flag {
                case .value:
                    values.append(bValues[Int(cell.index)])
                    cell.index = UInt32(values.count - 1)
                case .attachment:
                    attachments.append(bAttachments[Int(cell.index)])
                    cell.index = UInt32(attachments.count - 1)
                case .removed, .present:
                    break
                }
            case .contribution, .baseline:
                values.append(bValues[Int(cell.index)])
                cell.index = UInt32(values.count - 1)
            }
            out.append(cell)
        }

        @inline(__always)
        static func precedes(_ x: Cell, _ y: Cell) -> Bool { DocumentState.precedes(x, y) }
    }
}
