/// Joining by one merge pass over both trees in pre-order, field names matched level by level:
/// for deltas too large to join in place. Cells of `self` keep their indices into `self`'s
/// tables; cells taken from `other` get their name and payload copied across.
extension DocumentState {
    mutating func merge(_ other: DocumentState) {
        // The tables move into the merge (so appending to them does not copy them); `self`'s
        // cells keep their indices, since the merge only appends or reuses slots.
        var merge = Merge(aCells: cells, b: other, names: names, values: values, attachments: attachments)
        names = []
        values = []
        attachments = []
        merge.mergeMap(0..<merge.aCells.count, 0..<other.cells.count, depth: 0)
        cells = merge.out
        names = merge.names
        values = merge.values
        attachments = merge.attachments
        compactIfWasteful()
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
                if DocumentState.precedes(aCells[i], bCells[j]) { takeB(j) } else { out.append(aCells[i]) }
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
                if DocumentState.precedes(aCells[x], bCells[y]) { replaceB(y, over: aCells[x]) } else { out.append(aCells[x]) }
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
                    if bWins { replaceB(j, over: x) } else { out.append(x) }
                    i += 1
                    j += 1
                }
            }
        }

        /// Appends a cell of `b` that wins over `current`, `a`'s cell in the same place: its
        /// payload takes over `current`'s slot, or empties it (see `takePayload`).
        private mutating func replaceB(_ k: Int, over current: Cell) {
            var cell = bCells[k]
            let currentHoldsValue = current.kind != .register || current.flag == .value
            let incomingHoldsValue = cell.kind != .register || cell.flag == .value
            if incomingHoldsValue && currentHoldsValue {
                values[Int(current.index)] = bValues[Int(cell.index)]
                cell.index = current.index
                out.append(cell)
                return
            }
            if currentHoldsValue {
                values[Int(current.index)] = .null
            } else if current.flag == .attachment {
                attachments[Int(current.index)] = DocumentState.emptyAttachment
            }
            takeB(k)
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
    }
}
