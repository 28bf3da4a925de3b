/// Joining two flat states. Most deltas touch a few cells: each delta cell replaces its
/// counterpart where it wins, and what has no counterpart is inserted where it belongs, in place.
/// Deltas that would need many insertions take one linear merge pass instead (see
/// `DocumentState+Merge.swift`).
///
/// Payloads: every payload index is used by one cell only (a rule of the layout), so a winning
/// value takes over the slot of the value it replaces, and a removal empties the slot at once:
/// a removed value is not kept, not even in memory, and the tables do not grow with overwrites.
extension DocumentState {
    /// Merges `other` (a whole state or a delta) into this state. Returns whether this state
    /// changed: its version grew, or a cell of `other` went in. Callers ask this rather than
    /// compare with a copy kept from before, which would cost the copy and the comparison.
    @discardableResult
    public mutating func join(_ other: DocumentState) -> Bool {
        let versionBefore = version
        version.formUnion(other.version)
        let versionGrew = version != versionBefore
        guard !other.cells.isEmpty else { return versionGrew }
        if cells.isEmpty {
            let version = self.version
            self = other
            self.version = version
            // A decoded delta may share its tables with a whole batch: keep only ours.
            compactIfWasteful()
            compactNamesIfWasteful()
            return true
        }
        if let tookAny = joinInPlace(other) { return tookAny || versionGrew }
        // Only a delta with more insertions than joining in place allows gets here: it changes.
        merge(other)
        return true
    }

    /// One step of joining in place: `other.cells[source]` replaces `cells[target]` if it wins, or
    /// (`count` > 0) `other.cells[source..<source + count]` go in before `cells[target]`.
    private struct Action {
        var target: Int
        var source: Int
        var count: Int
    }

    /// Most deltas need at most this many insertions; more take the merge (repeated insertion
    /// is quadratic, the merge linear).
    private static let insertionLimit = 8

    /// Joins `other` in place, returning whether a cell of it went in; nil, changing nothing,
    /// for a delta that would need many insertions.
    private mutating func joinInPlace(_ other: DocumentState) -> Bool? {
        withUnsafeTemporaryAllocation(of: Action.self, capacity: other.cells.count) { actions in
            var planned = 0
            let fits = cells.withUnsafeBufferPointer { a in
                other.cells.withUnsafeBufferPointer { b in
                    names.withUnsafeBufferPointer { aNames in
                        other.names.withUnsafeBufferPointer { bNames in
                            var plan = Plan(a: a, aNames: aNames, b: b, bNames: bNames, actions: actions)
                            let fits = plan.match(0..<b.count, into: 0..<a.count)
                            planned = plan.count
                            return fits
                        }
                    }
                }
            }
            guard fits else { return nil }
            var nameCache = NameCache()
            var tookAny = false
            for k in 0..<planned where actions[k].count == 0 {
                if replace(actions[k].target, with: other, actions[k].source) { tookAny = true }
            }
            // Insertions from the back, so earlier positions stay valid; at one position, in reverse.
            for k in stride(from: planned - 1, through: 0, by: -1) where actions[k].count > 0 {
                let action = actions[k]
                cells.insert(contentsOf: other.cells[action.source..<action.source + action.count], at: action.target)
                for i in action.target..<action.target + action.count { adoptPayload(ofCellAt: i, from: other, &nameCache) }
                tookAny = true
            }
            compactIfWasteful()
            return tookAny
        }
    }

    /// Puts `other.cells[source]` in place of `cells[target]` if it wins there; returns whether it did.
    @inline(__always)
    private mutating func replace(_ target: Int, with other: DocumentState, _ source: Int) -> Bool {
        let current = cells[target]
        var incoming = other.cells[source]
        switch incoming.kind {
        case .field: return false
        case .marker:
            guard Self.precedes(current, incoming) else { return false }
            cells[target] = incoming
            return true
        case .register:
            guard Self.precedes(current, incoming) else { return false }
        case .contribution:
            guard current.order < incoming.order else { return false }
        case .baseline:
            guard current.order != incoming.order ? current.order < incoming.order : current.event < incoming.event else { return false }
        }
        takePayload(of: &incoming, from: other, replacing: current)
        cells[target] = incoming
        return true
    }

    /// Gives `incoming` (a register or counter cell of `other` about to replace `current`) its
    /// payload in this state's tables, reusing or emptying `current`'s slot.
    @inline(__always)
    mutating func takePayload(of incoming: inout Cell, from other: DocumentState, replacing current: Cell) {
        let currentHoldsValue = current.kind != .register || current.flag == .value
        let incomingHoldsValue = incoming.kind != .register || incoming.flag == .value
        if incomingHoldsValue {
            let value = other.values[Int(incoming.index)]
            if currentHoldsValue {
                values[Int(current.index)] = value
                incoming.index = current.index
                return
            }
            values.append(value)
            incoming.index = UInt32(values.count - 1)
        } else if incoming.flag == .attachment {
            attachments.append(other.attachments[Int(incoming.index)])
            incoming.index = UInt32(attachments.count - 1)
        }
        if currentHoldsValue {
            values[Int(current.index)] = .null
        } else if current.flag == .attachment {
            attachments[Int(current.index)] = Self.emptyAttachment
        }
    }

    /// What an attachment slot holds once its register no longer uses it.
    static let emptyAttachment = AttachmentToken(hash: [], length: 0)

    /// Copies the name or payload of the cell at `i` (just inserted from `other`) into this
    /// state's tables.
    private mutating func adoptPayload(ofCellAt i: Int, from other: DocumentState, _ nameCache: inout NameCache) {
        let cell = cells[i]
        switch cell.kind {
        case .field:
            cells[i].index = nameCache.index(of: cell.index, in: other.names, adding: &names)
        case .register where cell.flag == .value, .contribution, .baseline:
            values.append(other.values[Int(cell.index)])
            cells[i].index = UInt32(values.count - 1)
        case .register where cell.flag == .attachment:
            attachments.append(other.attachments[Int(cell.index)])
            cells[i].index = UInt32(attachments.count - 1)
        default:
            break
        }
    }

    /// Where names taken from another state went: a few per join, so a short list.
    struct NameCache {
        private var pairs: [(from: UInt32, to: UInt32)] = []

        /// This state's index for `names[index]` of the other state, adding the name if new.
        mutating func index(of index: UInt32, in theirs: [String], adding ours: inout [String]) -> UInt32 {
            for pair in pairs where pair.from == index { return pair.to }
            let name = theirs[Int(index)]
            let mine: UInt32
            if let existing = ours.firstIndex(of: name) {
                mine = UInt32(existing)
            } else {
                ours.append(name)
                mine = UInt32(ours.count - 1)
            }
            pairs.append((index, mine))
            return mine
        }
    }

    /// Matches the cells of a delta (`b`) with this state's (`a`), map by map, into actions.
    private struct Plan {
        let a: UnsafeBufferPointer<Cell>
        let aNames: UnsafeBufferPointer<String>
        let b: UnsafeBufferPointer<Cell>
        let bNames: UnsafeBufferPointer<String>
        let actions: UnsafeMutableBufferPointer<Action>
        var count = 0
        var insertions = 0

        @inline(__always)
        private mutating func add(_ target: Int, _ source: Int, _ count: Int = 0) {
            actions[self.count] = Action(target: target, source: source, count: count)
            self.count += 1
            if count > 0 { insertions += 1 }
        }

        /// Plans joining `b[br]` (a map) into `a[ar]` (the same map here); false once the
        /// insertions pass the limit.
        mutating func match(_ br: Range<Int>, into ar: Range<Int>) -> Bool {
            var i = ar.lowerBound, j = br.lowerBound
            let aMarker = i < ar.upperBound && a[i].kind == .marker
            if j < br.upperBound, b[j].kind == .marker {
                if aMarker { add(i, j) } else { add(i, j, 1) }
                j += 1
            }
            if aMarker { i += 1 }
            while j < br.upperBound {
                let name = bNames[Int(b[j].index)]
                let sb = DocumentState.span(in: b, ofFieldAt: j, end: br.upperBound)
                // Both sides list fields in name order: walk forward to the same name or past it.
                var same = false
                while i < ar.upperBound {
                    let other = aNames[Int(a[i].index)]
                    if other == name {
                        same = true
                        break
                    }
                    if !(other < name) { break }
                    i = DocumentState.span(in: a, ofFieldAt: i, end: ar.upperBound).end
                }
                j = sb.end
                guard same else {
                    add(i, sb.field, sb.end - sb.field)
                    if insertions > DocumentState.insertionLimit { return false }
                    continue
                }
                let sa = DocumentState.span(in: a, ofFieldAt: i, end: ar.upperBound)
                if let r = sb.register {
                    if let target = sa.register { add(target, r) } else { add(sa.field + 1, r, 1) }
                }
                for k in sb.counter {
                    var target = -1
                    for t in sa.counter where a[t].kind == b[k].kind && a[t].order.site == b[k].order.site {
                        target = t
                        break
                    }
                    if target >= 0 {
                        add(target, k)
                        continue
                    }
                    // Contributions come first, then baselines, each in site order.
                    var position = sa.counter.lowerBound
                    while position < sa.counter.upperBound,
                        a[position].kind == .contribution && b[k].kind == .baseline
                            || (a[position].kind == b[k].kind && a[position].order.site < b[k].order.site)
                    {
                        position += 1
                    }
                    add(position, k, 1)
                }
                if !sb.nested.isEmpty {
                    if sa.nested.isEmpty {
                        add(sa.nested.lowerBound, sb.nested.lowerBound, sb.nested.count)
                    } else if !match(sb.nested, into: sa.nested) {
                        return false
                    }
                }
                if insertions > DocumentState.insertionLimit { return false }
                i = sa.end
            }
            return true
        }
    }

    /// The entry join order: `order`, then a removal over the value it removed, then `event`.
    @inline(__always)
    static func precedes(_ x: Cell, _ y: Cell) -> Bool {
        if x.order != y.order { return x.order < y.order }
        if x.isRemoved != y.isRemoved { return y.isRemoved }
        return x.event < y.event
    }
}
