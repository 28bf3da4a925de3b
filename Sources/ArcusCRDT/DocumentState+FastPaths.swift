/// Direct edits of the flat layout for the commonest mutations: writing a value to a field
/// whose register is its only live component, under maps that are live and have no other live
/// component, and adding to a live counter this site already contributes to. Each returns nil, changing nothing, when its
/// conditions do not hold; the general mutators then run. Where they apply, they give exactly
/// the state and delta the general mutators give (a property test checks it on random states).
extension DocumentState {
    /// Where a register write lands: an existing register cell, or a new field inserted at a
    /// cell position (a field boundary inside its parent map).
    private enum Target {
        case register(Int)
        case insertion(at: Int, depth: UInt8)
    }

    private func isLive(_ range: Range<Int>) -> Bool { range.contains(where: { isLiveCell($0) }) }

    /// The field at `path`, reached through live maps that have no other live component; or,
    /// when the last step is missing, where it would go.
    private func locate(_ path: ArraySlice<String>) -> (span: FieldSpan?, insertAt: Int, depth: UInt8)? {
        var range = cells.indices
        var depth: UInt8 = 0
        for (step, name) in zip(0..., path) {
            guard let span = field(named: name, in: range, depth: depth) else {
                guard step == path.count - 1 else { return nil }
                return (nil, insertionPoint(of: name, in: range), depth)
            }
            if step == path.count - 1 { return (span, span.field, depth) }
            if let r = span.register, !cells[r].isRemoved { return nil }
            guard !isLive(span.counter), isLive(span.nested) else { return nil }
            range = span.nested
            depth += 1
        }
        return nil
    }

    /// The field boundary in `range` (a map) before which a field named `name` belongs.
    private func insertionPoint(of name: String, in range: Range<Int>) -> Int {
        var i = range.lowerBound
        if i < range.upperBound, cells[i].kind == .marker { i += 1 }
        while i < range.upperBound, names[Int(cells[i].index)] < name { i = span(ofFieldAt: i).end }
        return i
    }

    /// One planned write: a register value, or a whole new map (an object stored as a MAP) laid
    /// out as cells to insert.
    private struct PlannedWrite {
        var path: [String]
        var value: Value
        var target: Target
        /// For a new map: its cells (marker and fields, depth-relative to the map's field) and
        /// tables; empty for a register.
        var subtree: DocumentState?
    }

    /// Writes registers (and new maps) in place; `writes` are (path, value) pairs with distinct
    /// paths. With `mergingObjects` (an upsert), objects stored as maps merge into an existing
    /// live map field by field; without (a set, which replaces), they take the general path.
    mutating func fastWriteRegisters(_ writes: [(path: [String], value: Value)], mergingObjects: Bool, stamp: Stamp, hints: TypeHints) -> DocumentState? {
        guard !writes.isEmpty else { return nil }
        if cells.isEmpty { return mergingObjects ? fastCreate(writes, stamp: stamp, hints: hints) : nil }
        guard isLive else { return nil }
        var planned: [PlannedWrite] = []
        planned.reserveCapacity(writes.count)
        var pending = writes[...]
        var expanded: [(path: [String], value: Value)] = []
        while let (path, value) = pending.popFirst() ?? expanded.popLast() {
            if hints.type(at: path) == .counter { return nil }
            guard let (span, insertAt, depth) = locate(path[...]) else { return nil }
            if case .object(let object) = value, hints.fields.isEmpty ? hints.objects == .map : hints.storesAsMap(value, at: FieldPath(path)) {
                guard mergingObjects else { return nil }
                if let span {
                    // Merge into an existing map: its fields become writes of their own.
                    if let r = span.register, !cells[r].isRemoved { return nil }
                    guard !isLive(span.counter), isLive(span.nested) else { return nil }
                    for (name, child) in object { expanded.append((path + [name], child)) }
                    if object.isEmpty { continue }
                } else {
                    var subtree = DocumentState()
                    subtree.cells.append(Cell(kind: .marker, depth: depth + 1, flag: .present, order: stamp, event: stamp))
                    guard Int(depth) + 1 < Value.maximumNestingDepth,
                        subtree.appendFields(object.sorted { $0.key < $1.key }, at: FieldPath(path), depth: depth + 1, stamp: stamp, hints: hints)
                    else { return nil }
                    planned.append(PlannedWrite(path: path, value: value, target: .insertion(at: insertAt, depth: depth), subtree: subtree))
                }
                continue
            }
            if let span {
                guard let register = span.register, !isLive(span.counter), !isLive(span.nested) else { return nil }
                planned.append(PlannedWrite(path: path, value: value, target: .register(register)))
            } else {
                planned.append(PlannedWrite(path: path, value: value, target: .insertion(at: insertAt, depth: depth)))
            }
        }
        guard !planned.isEmpty else { return nil }
        planned.sort { $0.path.lexicographicallyPrecedes($1.path) }
        let delta = Self.writeDelta(planned, stamp: stamp)

        // Replacements first (they keep positions), then insertions from the back, so that
        // earlier insertion points stay valid; equal points go in reverse name order.
        for write in planned {
            guard case .register(let index) = write.target else { continue }
            let current = cells[index]
            let incoming = Cell(kind: .register, depth: current.depth, flag: .value, index: 0, order: stamp, event: stamp)
            guard Self.precedes(current, incoming) else { continue }
            // The new value takes over the old one's slot (each slot has one cell).
            var slot = current.index
            if current.flag == .value {
                values[Int(slot)] = write.value
            } else {
                values.append(write.value)
                slot = UInt32(values.count - 1)
            }
            cells[index] = Cell(kind: .register, depth: current.depth, flag: .value, index: slot, order: stamp, event: stamp)
        }
        for write in planned.reversed() {
            guard case .insertion(let position, let depth) = write.target else { continue }
            names.append(write.path[write.path.count - 1])
            var block: [Cell] = [.field(depth: depth, name: UInt32(names.count - 1))]
            if let subtree = write.subtree {
                block.append(contentsOf: adopt(subtree))
            } else {
                values.append(write.value)
                block.append(Cell(kind: .register, depth: depth, flag: .value, index: UInt32(values.count - 1), order: stamp, event: stamp))
            }
            cells.insert(contentsOf: block, at: position)
        }
        version.observe(stamp)
        compactIfWasteful()
        return delta
    }

    /// `subtree`'s cells with their names and values moved into this state's tables.
    private mutating func adopt(_ subtree: DocumentState) -> [Cell] {
        subtree.cells.map { cell in
            var cell = cell
            switch cell.kind {
            case .field:
                names.append(subtree.names[Int(cell.index)])
                cell.index = UInt32(names.count - 1)
            case .register where cell.flag == .value:
                values.append(subtree.values[Int(cell.index)])
                cell.index = UInt32(values.count - 1)
            default: break
            }
            return cell
        }
    }

    /// The delta of planned writes (sorted by path): each under its path's field cells.
    private static func writeDelta(_ writes: [PlannedWrite], stamp: Stamp) -> DocumentState {
        var delta = DocumentState(version: VersionVector(stamp))
        var previous: [String] = []
        for write in writes {
            let path = write.path
            var shared = 0
            while shared < min(previous.count, path.count - 1) && previous[shared] == path[shared] { shared += 1 }
            for depth in shared..<path.count {
                delta.names.append(path[depth])
                delta.cells.append(.field(depth: UInt8(depth), name: UInt32(delta.names.count - 1)))
            }
            if let subtree = write.subtree {
                delta.cells.append(contentsOf: delta.adopt(subtree))
            } else {
                delta.values.append(write.value)
                delta.cells.append(Cell(kind: .register, depth: UInt8(path.count - 1), flag: .value,
                                        index: UInt32(delta.values.count - 1), order: stamp, event: stamp))
            }
            previous = path
        }
        return delta
    }

    /// A new document from an upsert of `writes` (one-step paths): the marker, then each field,
    /// objects laid out as maps with their own markers, as the general mutators would.
    private mutating func fastCreate(_ writes: [(path: [String], value: Value)], stamp: Stamp, hints: TypeHints) -> DocumentState? {
        guard writes.allSatisfy({ $0.path.count == 1 }) else { return nil }
        return fastCreate(writes.map { ($0.path[0], $0.value) }, stamp: stamp, hints: hints)
    }

    /// A new document from top-level fields (the commonest write of all: an upsert of a new
    /// document), built straight into sorted cells.
    mutating func fastCreate(_ fields: [String: Value], excluding excluded: String?, stamp: Stamp, hints: TypeHints) -> DocumentState? {
        var list: [(String, Value)] = []
        list.reserveCapacity(fields.count)
        for (name, value) in fields where name != excluded { list.append((name, value)) }
        return fastCreate(list, stamp: stamp, hints: hints)
    }

    private mutating func fastCreate(_ fields: [(String, Value)], stamp: Stamp, hints: TypeHints) -> DocumentState? {
        guard !fields.isEmpty else { return nil }
        var delta = DocumentState(version: VersionVector(stamp))
        delta.cells.reserveCapacity(2 * fields.count + 1)
        delta.names.reserveCapacity(fields.count)
        delta.values.reserveCapacity(fields.count)
        delta.cells.append(Cell(kind: .marker, depth: 0, flag: .present, order: stamp, event: stamp))
        var fields = fields
        fields.sort { $0.0 < $1.0 }
        guard delta.appendFields(fields, at: FieldPath.root, depth: 0, stamp: stamp, hints: hints) else { return nil }
        self = delta
        return delta
    }

    /// Appends `fields` (sorted) of a new map at `depth`; false when one needs the general path.
    private mutating func appendFields(_ fields: [(String, Value)], at parent: FieldPath, depth: UInt8, stamp: Stamp, hints: TypeHints) -> Bool {
        // Without per-field hints, no path needs building (most writes have none).
        let plain = hints.fields.isEmpty
        for (name, value) in fields {
            let path = plain ? parent : parent.appending(name)
            if !plain, hints.type(at: path) == .counter { return false }
            names.append(name)
            cells.append(.field(depth: depth, name: UInt32(names.count - 1)))
            if case .object(let object) = value, plain ? hints.objects == .map : hints.storesAsMap(value, at: path) {
                guard Int(depth) + 1 < Value.maximumNestingDepth else { return false }
                cells.append(Cell(kind: .marker, depth: depth + 1, flag: .present, order: stamp, event: stamp))
                guard appendFields(object.sorted { $0.key < $1.key }, at: path, depth: depth + 1, stamp: stamp, hints: hints) else {
                    return false
                }
            } else {
                values.append(value)
                cells.append(Cell(kind: .register, depth: depth, flag: .value, index: UInt32(values.count - 1), order: stamp, event: stamp))
            }
        }
        return true
    }

    /// Adds `amount` to the live counter at `path` where this site already has a contribution.
    mutating func fastIncrement(_ path: FieldPath, by amount: Number, at stamp: Stamp) -> DocumentState? {
        guard !path.isRoot, isLive, let leaf = locate(path.components[...])?.span,
            leaf.register.map({ cells[$0].isRemoved }) ?? true, !isLive(leaf.nested),
            counterValue(leaf.counter).1 != nil,
            let mine = leaf.counter.first(where: { cells[$0].kind == .contribution && cells[$0].order.site == stamp.site })
        else { return nil }
        var own = number(cells[mine])
        if let baseline = leaf.counter.first(where: { cells[$0].kind == .baseline && cells[$0].order.site == stamp.site }),
            cells[baseline].order > cells[mine].order
        {
            own = number(cells[baseline])
        }
        let total = own + amount
        values[Int(cells[mine].index)] = total.value
        cells[mine] = Cell(kind: .contribution, depth: cells[mine].depth, index: cells[mine].index, order: stamp, event: stamp)
        version.observe(stamp)
        compactIfWasteful()

        var delta = DocumentState(version: VersionVector(stamp))
        for (d, name) in path.components.enumerated() {
            delta.names.append(name)
            delta.cells.append(.field(depth: UInt8(d), name: UInt32(delta.names.count - 1)))
        }
        delta.values.append(total.value)
        delta.cells.append(Cell(kind: .contribution, depth: UInt8(path.components.count - 1), index: 0, order: stamp, event: stamp))
        return delta
    }
}
