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

    /// What joining one of `other`'s cells (or subtrees) in place does.
    private enum Action {
        /// `other.cells[source]` replaces `cells[target]` if it wins.
        case replace(target: Int, source: Int)
        /// `other.cells[sources]` go in before `cells[position]`.
        case insert(position: Int, sources: Range<Int>)
    }

    /// Most deltas touch a few cells, some of which this state lacks: each delta cell replaces
    /// its counterpart where it wins, and what has no counterpart is inserted where it belongs,
    /// without rebuilding the layout. Returns false, changing nothing, for a delta that would
    /// need many insertions (the merge is linear; repeated insertion is not).
    private mutating func joinInPlace(_ other: DocumentState) -> Bool {
        var actions: [Action] = []
        actions.reserveCapacity(other.cells.count)
        var insertions = 0
        Self.match(other.cells, 0..<other.cells.count, other.names, into: cells, 0..<cells.count, names, &actions, &insertions)
        guard insertions <= 8 else { return false }
        var removedPayload = false
        var remap = TableRemap(names: other.names.count)
        for action in actions {
            guard case .replace(let target, let source) = action else { continue }
            let current = cells[target]
            var incoming = other.cells[source]
            let wins: Bool
            switch incoming.kind {
            case .field: continue
            case .marker, .register: wins = Self.precedes(current, incoming)
            case .contribution: wins = current.order < incoming.order
            case .baseline: wins = current.order != incoming.order ? current.order < incoming.order : current.event < incoming.event
            }
            guard wins else { continue }
            if incoming.isRemoved && current.kind == .register && current.flag != .removed { removedPayload = true }
            remap.move(&incoming, from: other, into: &self)
            cells[target] = incoming
        }
        // Insertions from the back, so earlier positions stay valid; at one position, in reverse.
        for action in actions.reversed() {
            guard case .insert(let position, let sources) = action else { continue }
            var block = Array(other.cells[sources])
            for k in block.indices { remap.move(&block[k], from: other, into: &self) }
            cells.insert(contentsOf: block, at: position)
        }
        compactIfWasteful(force: removedPayload)
        return true
    }

    /// Copies a cell's name or payload from another state's tables into this state's.
    private struct TableRemap {
        /// `other`'s name index → index here, filled on first use.
        var names: [UInt32]

        init(names count: Int) { names = Array(repeating: .max, count: count) }

        mutating func move(_ cell: inout Cell, from other: DocumentState, into state: inout DocumentState) {
            switch cell.kind {
            case .field:
                let index = Int(cell.index)
                if names[index] == .max {
                    let name = other.names[index]
                    if let existing = state.names.firstIndex(of: name) {
                        names[index] = UInt32(existing)
                    } else {
                        state.names.append(name)
                        names[index] = UInt32(state.names.count - 1)
                    }
                }
                cell.index = names[index]
            case .register where cell.flag == .value, .contribution, .baseline:
                state.values.append(other.values[Int(cell.index)])
                cell.index = UInt32(state.values.count - 1)
            case .register where cell.flag == .attachment:
                state.attachments.append(other.attachments[Int(cell.index)])
                cell.index = UInt32(state.attachments.count - 1)
            default:
                break
            }
        }
    }

    /// Plans joining `b[br]` (a map) into `a[ar]` (the same map here).
    private static func match(
        _ b: [Cell], _ br: Range<Int>, _ bNames: [String],
        into a: [Cell], _ ar: Range<Int>, _ aNames: [String], _ actions: inout [Action], _ insertions: inout Int
    ) {
        var i = ar.lowerBound, j = br.lowerBound
        let aMarker = i < ar.upperBound && a[i].kind == .marker
        if j < br.upperBound, b[j].kind == .marker {
            if aMarker {
                actions.append(.replace(target: i, source: j))
            } else {
                actions.append(.insert(position: i, sources: j..<j + 1))
                insertions += 1
            }
            j += 1
        }
        if aMarker { i += 1 }
        while j < br.upperBound {
            let name = bNames[Int(b[j].index)]
            let sb = span(in: b, ofFieldAt: j)
            // Both sides list fields in name order: walk forward to the same name or past it.
            while i < ar.upperBound, aNames[Int(a[i].index)] < name { i = span(in: a, ofFieldAt: i).end }
            guard i < ar.upperBound, aNames[Int(a[i].index)] == name else {
                actions.append(.insert(position: i, sources: sb.field..<sb.end))
                insertions += 1
                j = sb.end
                continue
            }
            let sa = span(in: a, ofFieldAt: i)
            if let r = sb.register {
                if let target = sa.register {
                    actions.append(.replace(target: target, source: r))
                } else {
                    actions.append(.insert(position: sa.field + 1, sources: r..<r + 1))
                    insertions += 1
                }
            }
            for k in sb.counter {
                if let target = sa.counter.first(where: { a[$0].kind == b[k].kind && a[$0].order.site == b[k].order.site }) {
                    actions.append(.replace(target: target, source: k))
                } else {
                    // Contributions come first, then baselines, each in site order.
                    var position = sa.counter.lowerBound
                    while position < sa.counter.upperBound,
                        a[position].kind == .contribution && b[k].kind == .baseline
                            || (a[position].kind == b[k].kind && a[position].order.site < b[k].order.site)
                    {
                        position += 1
                    }
                    actions.append(.insert(position: position, sources: k..<k + 1))
                    insertions += 1
                }
            }
            if !sb.nested.isEmpty {
                if sa.nested.isEmpty {
                    actions.append(.insert(position: sa.nested.lowerBound, sources: sb.nested))
                    insertions += 1
                } else {
                    match(b, sb.nested, bNames, into: a, sa.nested, aNames, &actions, &insertions)
                }
            }
            i = sa.end
            j = sb.end
        }
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
