/// Conversions between the flat layout and the nested view (`MapNode`, `Slot`, `Counter`).
extension DocumentState {
    func mapNode(_ range: Range<Int>, depth: UInt8) -> MapNode {
        var node = MapNode()
        var i = range.lowerBound
        if i < range.upperBound, cells[i].kind == .marker {
            node.marker = entry(cells[i])
            i += 1
        }
        while i < range.upperBound {
            let span = self.span(ofFieldAt: i)
            _ = node.fields.appendInOrder(names[Int(cells[i].index)], slotView(span))
            i = span.end
        }
        return node
    }

    func slotView(_ span: FieldSpan) -> Slot {
        var slot = Slot()
        if let r = span.register { slot.register = entry(cells[r]) }
        if !span.counter.isEmpty {
            var counter = Counter()
            for i in span.counter {
                let cell = cells[i]
                if cell.kind == .contribution {
                    counter.contributions[cell.order.site] = Counter.Contribution(total: number(cell), stamp: cell.order)
                } else {
                    counter.baselines[cell.order.site] = Counter.Baseline(total: number(cell), stamp: cell.order, event: cell.event)
                }
            }
            slot.counter = counter
        }
        if !span.nested.isEmpty { slot.map = mapNode(span.nested, depth: cells[span.field].depth + 1) }
        return slot
    }

    func entry(_ cell: Cell) -> Entry {
        let payload: Entry.Payload
        switch (cell.kind, cell.flag) {
        case (.marker, .removed), (.register, .removed): payload = .removed
        case (.marker, _): payload = .present
        case (_, .attachment): payload = .attachment(attachments[Int(cell.index)])
        default: payload = .value(values[Int(cell.index)])
        }
        return Entry(order: cell.order, event: cell.event, payload: payload)
    }
}

/// Lays a nested tree out as cells.
struct Flattener {
    var cells: [Cell] = []
    var names: [String] = []
    var values: [Value] = []
    var attachments: [AttachmentToken] = []

    mutating func append(_ node: MapNode, depth: UInt8) {
        if let m = node.marker {
            cells.append(Cell(kind: .marker, depth: depth, flag: m.isRemoved ? .removed : .present, order: m.order, event: m.event))
        }
        for field in node.fields.elements {
            names.append(field.name)
            cells.append(.field(depth: depth, name: UInt32(names.count - 1)))
            append(field.slot, depth: depth)
        }
    }

    mutating func append(_ slot: Slot, depth: UInt8) {
        if let r = slot.register {
            switch r.payload {
            case .value(let v):
                values.append(v)
                cells.append(Cell(kind: .register, depth: depth, flag: .value, index: UInt32(values.count - 1), order: r.order, event: r.event))
            case .attachment(let token):
                attachments.append(token)
                cells.append(Cell(kind: .register, depth: depth, flag: .attachment, index: UInt32(attachments.count - 1), order: r.order, event: r.event))
            case .removed, .present:
                cells.append(Cell(kind: .register, depth: depth, flag: .removed, order: r.order, event: r.event))
            }
        }
        if let c = slot.counter {
            for site in c.contributions.keys.sorted() {
                let contribution = c.contributions[site]!
                values.append(contribution.total.value)
                cells.append(Cell(kind: .contribution, depth: depth, index: UInt32(values.count - 1), order: contribution.stamp, event: contribution.stamp))
            }
            for site in c.baselines.keys.sorted() {
                let baseline = c.baselines[site]!
                values.append(baseline.total.value)
                cells.append(Cell(kind: .baseline, depth: depth, index: UInt32(values.count - 1), order: baseline.stamp, event: baseline.event))
            }
        }
        if let m = slot.map { append(m, depth: depth + 1) }
    }
}
