/// The replicated state of one document: an add-wins map at its root, and the version vector of
/// every event this replica has merged into it.
///
/// A `DocumentState` is also what a delta is: a fragment holding only some entries. Joining is
/// commutative, associative and idempotent, so deltas may arrive in any order, more than once.
/// The document's `_id` and collection live outside it, with whoever keys documents.
///
/// Storage is flat (see `Cell`): `cells` in pre-order, with field names in `names` and register
/// and counter payloads in `values` and `attachments`. The nested `MapNode`/`Slot` types are a
/// view of the same tree, used to build deltas and to inspect state.
public struct DocumentState: Sendable {
    public internal(set) var cells: [Cell] = []
    public internal(set) var names: [String] = []
    public internal(set) var values: [Value] = []
    public internal(set) var attachments: [AttachmentToken] = []
    /// Events merged into this state, per site.
    public var version: VersionVector

    public init(version: VersionVector = .empty) { self.version = version }

    /// Builds the flat state of a tree.
    public init(root: MapNode, version: VersionVector = .empty) {
        self.version = version
        var flattener = Flattener()
        flattener.append(root, depth: 0)
        cells = flattener.cells
        names = flattener.names
        values = flattener.values
        attachments = flattener.attachments
    }

    /// A state from its flat layout. The caller guarantees the layout's rules (see `Cell`):
    /// pre-order, fields in strictly increasing name order within each map, counter cells in
    /// increasing site order, every index inside its table. Decoders use this after checking.
    public init(validatedCells cells: [Cell], names: [String], values: [Value], attachments: [AttachmentToken], version: VersionVector) {
        self.cells = cells
        self.names = names
        self.values = values
        self.attachments = attachments
        self.version = version
    }

    /// The tree, as nested maps and slots.
    public var root: MapNode { mapNode(cells.indices, depth: 0) }

    public var isEmpty: Bool { cells.isEmpty }

    /// Whether readers see the document: it was created and not removed, or a field written
    /// concurrently with its removal survived.
    public var isLive: Bool {
        for i in cells.indices where isLiveCell(i) { return true }
        return false
    }

    /// The fields readers see, as an object; nil when the document is not live.
    public var value: Value? {
        let (object, order) = mapValue(cells.indices)
        return order == nil ? nil : .object(object)
    }

    public func joined(_ other: DocumentState) -> DocumentState {
        var result = self
        result.join(other)
        return result
    }

    /// Calls `body` with every event recorded in the state.
    public func forEachEvent(_ body: (Stamp) -> Void) {
        for i in cells.indices where cells[i].kind != .field { body(cells[i].event) }
    }

    /// The version vector computed from the events present in the state.
    public var eventVersion: VersionVector {
        var v = VersionVector()
        forEachEvent { v.observe($0) }
        return v
    }

    /// The slot at `path`, as a view, if the state has one.
    public func slot(at path: FieldPath) -> Slot? {
        var range = cells.indices
        var depth: UInt8 = 0
        for (step, name) in path.components.enumerated() {
            guard let span = field(named: name, in: range, depth: depth) else { return nil }
            if step == path.components.count - 1 { return slotView(span) }
            range = span.nested
            depth += 1
        }
        return nil
    }

    /// The delta of every event that `version` does not cover; nil when there is none. Joined
    /// into a replica whose state covers `version`, it brings that replica up to this state.
    public func changes(since version: VersionVector) -> DocumentState? {
        guard !self.version.isCovered(by: version) else { return nil }
        var delta = DocumentState(version: self.version.subtracting(version))
        delta.names = names
        delta.values = values
        delta.attachments = attachments
        delta.cells.reserveCapacity(cells.count)
        _ = filter(cells.indices, depth: 0, into: &delta.cells) { !version.contains($0.event) }
        return delta.cells.isEmpty ? nil : delta
    }

    /// This state without the cells whose events `drop` names (with the fields that led only to
    /// them); the version is kept, so the dropped events still count as seen. For a store that
    /// reaped a removed document's tombstone: copies of the document's old cells that reach it
    /// later must not bring the removed fields back.
    public func dropping(_ drop: (Stamp) -> Bool) -> DocumentState {
        var kept = DocumentState(version: version)
        kept.names = names
        kept.values = values
        kept.attachments = attachments
        kept.cells.reserveCapacity(cells.count)
        _ = filter(cells.indices, depth: 0, into: &kept.cells) { !drop($0.event) }
        return kept
    }

    /// The part of this state made of events `version` covers: roughly what a replica that has
    /// seen `version` holds of the document (removals it has not seen are not undone, so it is
    /// an estimate for deciding what to send, never a state to store).
    public func restricted(to version: VersionVector) -> DocumentState {
        var part = DocumentState(version: self.version.intersection(version))
        part.names = names
        part.values = values
        part.attachments = attachments
        part.cells.reserveCapacity(cells.count)
        _ = filter(cells.indices, depth: 0, into: &part.cells) { version.contains($0.event) }
        return part
    }

    /// Appends the cells in `range` (a map at `depth`) that `keep` accepts, with the field cells
    /// that lead to them; returns whether any was appended.
    func filter(_ range: Range<Int>, depth: UInt8, into out: inout [Cell], keep: (Cell) -> Bool) -> Bool {
        var any = false
        var i = range.lowerBound
        if i < range.upperBound, cells[i].kind == .marker {
            if keep(cells[i]) { out.append(cells[i]); any = true }
            i += 1
        }
        while i < range.upperBound {
            let span = self.span(ofFieldAt: i)
            let mark = out.count
            out.append(cells[i])
            var kept = false
            for j in span.field + 1..<span.nested.lowerBound where keep(cells[j]) {
                out.append(cells[j])
                kept = true
            }
            if filter(span.nested, depth: depth + 1, into: &out, keep: keep) { kept = true }
            if kept { any = true } else { out.removeLast(out.count - mark) }
            i = span.end
        }
        return any
    }
}

// MARK: - Reading the layout

extension DocumentState {
    /// Where one field's parts are: its register, its counter cells, its nested map's cells.
    public struct FieldSpan {
        public var field: Int
        public var register: Int?
        public var counter: Range<Int>
        public var nested: Range<Int>
        public var end: Int { nested.upperBound }
    }

    @inline(__always)
    public func span(ofFieldAt i: Int) -> FieldSpan { Self.span(in: cells, ofFieldAt: i) }

    @inline(__always)
    public static func span(in cells: [Cell], ofFieldAt i: Int) -> FieldSpan {
        cells.withUnsafeBufferPointer { span(in: $0, ofFieldAt: i, end: $0.count) }
    }

    /// The span of the field whose cell is at `i`, in cells read through a pointer (the merge
    /// and the encoder), within a map ending at `end`.
    @inline(__always)
    public static func span(in cells: UnsafeBufferPointer<Cell>, ofFieldAt i: Int, end n: Int) -> FieldSpan {
        let depth = cells[i].depth
        var j = i + 1
        var register: Int?
        if j < n, cells[j].depth == depth, cells[j].kind == .register {
            register = j
            j += 1
        }
        let counterStart = j
        while j < n, cells[j].depth == depth, cells[j].kind == .contribution || cells[j].kind == .baseline { j += 1 }
        let nestedStart = j
        while j < n, cells[j].depth > depth { j += 1 }
        return FieldSpan(field: i, register: register, counter: counterStart..<nestedStart, nested: nestedStart..<j)
    }

    func field(named name: String, in range: Range<Int>, depth: UInt8) -> FieldSpan? {
        var i = range.lowerBound
        if i < range.upperBound, cells[i].kind == .marker { i += 1 }
        while i < range.upperBound {
            if names[Int(cells[i].index)] == name { return span(ofFieldAt: i) }
            i = span(ofFieldAt: i).end
        }
        return nil
    }

    @inline(__always)
    func number(_ cell: Cell) -> Number { Number(values[Int(cell.index)]) ?? .zero }

    /// Whether a contribution is not undone by a baseline of the same counter.
    func isLiveContribution(_ i: Int, counter: Range<Int>) -> Bool {
        let c = cells[i]
        for j in counter where cells[j].kind == .baseline && cells[j].order.site == c.order.site {
            return c.order > cells[j].order
        }
        return true
    }

    func isLiveCell(_ i: Int) -> Bool {
        let c = cells[i]
        switch c.kind {
        case .field: return false
        case .marker, .register: return !c.isRemoved
        case .baseline: return false
        case .contribution:
            var start = i
            while start > 0, cells[start - 1].kind == .contribution || cells[start - 1].kind == .baseline { start -= 1 }
            var end = i + 1
            while end < cells.count, cells[end].depth == c.depth, cells[end].kind == .contribution || cells[end].kind == .baseline { end += 1 }
            return isLiveContribution(i, counter: start..<end)
        }
    }

    /// The counter's value and latest live increment.
    func counterValue(_ counter: Range<Int>) -> (Number, Stamp?) {
        var sum = Number.zero
        var latest: Stamp?
        for i in counter where cells[i].kind == .contribution {
            var amount = number(cells[i])
            var live = true
            for j in counter where cells[j].kind == .baseline && cells[j].order.site == cells[i].order.site {
                if cells[i].order > cells[j].order { amount = amount - number(cells[j]) } else { live = false }
            }
            guard live else { continue }
            sum = sum + amount
            if latest == nil || latest! < cells[i].order { latest = cells[i].order }
        }
        return (sum, latest)
    }

    /// The visible object of the map in `range` and its latest live stamp (nil: not live).
    func mapValue(_ range: Range<Int>) -> (object: [String: Value], order: Stamp?) {
        var object: [String: Value] = [:]
        let order = forEachVisibleField(in: range) { span, visible in
            object[names[Int(cells[span.field].index)]] = value(of: visible)
        }
        return (object, order)
    }

    /// Which component of a field readers see (see `Slot`).
    enum VisibleComponent {
        case register(Int)
        case counter(Number)
        case map(Range<Int>)
    }

    /// Calls `body` with each field of the map in `range` that readers see, in name order, and
    /// returns the map's latest live stamp (nil: the map is not live).
    @discardableResult
    func forEachVisibleField(in range: Range<Int>, _ body: (FieldSpan, VisibleComponent) -> Void) -> Stamp? {
        var latest: Stamp?
        var i = range.lowerBound
        if i < range.upperBound, cells[i].kind == .marker {
            if !cells[i].isRemoved { latest = cells[i].order }
            i += 1
        }
        while i < range.upperBound {
            let span = self.span(ofFieldAt: i)
            if let (visible, order) = visibleComponent(span) {
                body(span, visible)
                if latest == nil || latest! < order { latest = order }
            }
            i = span.end
        }
        return latest
    }

    /// The latest live stamp of the map in `range`; nil when it is not live.
    func mapOrder(_ range: Range<Int>) -> Stamp? {
        forEachVisibleField(in: range) { _, _ in }
    }

    /// The visible component of one field (see `Slot`): the latest live one; on a tie map, then
    /// counter, then register.
    func visibleComponent(_ span: FieldSpan) -> (VisibleComponent, Stamp)? {
        var best: (VisibleComponent, Stamp)?
        if let r = span.register, !cells[r].isRemoved {
            best = (.register(r), cells[r].order)
        }
        if !span.counter.isEmpty {
            let (sum, order) = counterValue(span.counter)
            if let order, best == nil || best!.1 < order { best = (.counter(sum), order) }
        }
        if !span.nested.isEmpty, let order = mapOrder(span.nested), best == nil || best!.1 <= order {
            best = (.map(span.nested), order)
        }
        return best
    }

    func value(of visible: VisibleComponent) -> Value {
        switch visible {
        case .register(let r):
            let cell = cells[r]
            return cell.flag == .attachment ? attachments[Int(cell.index)].value : values[Int(cell.index)]
        case .counter(let sum):
            return sum.value
        case .map(let nested):
            return .object(mapValue(nested).object)
        }
    }

}

// MARK: - Equality

extension DocumentState: Hashable {
    /// Equal when the trees and versions are equal, whatever the side tables hold.
    public static func == (x: DocumentState, y: DocumentState) -> Bool {
        guard x.cells.count == y.cells.count, x.version == y.version else { return false }
        for i in x.cells.indices {
            let a = x.cells[i], b = y.cells[i]
            guard a.kind == b.kind, a.depth == b.depth, a.flag == b.flag, a.order == b.order, a.event == b.event else { return false }
            guard x.payload(of: a) == y.payload(of: b) else { return false }
        }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(version)
        for cell in cells {
            hasher.combine(cell.kind)
            hasher.combine(cell.depth)
            hasher.combine(cell.order)
            hasher.combine(cell.event)
            hasher.combine(payload(of: cell))
        }
    }

    enum Payload: Hashable {
        case none, name(String), value(Value), attachment(AttachmentToken)
    }

    func payload(of cell: Cell) -> Payload {
        switch cell.kind {
        case .field: return .name(names[Int(cell.index)])
        case .marker: return .none
        case .register:
            switch cell.flag {
            case .value: return .value(values[Int(cell.index)])
            case .attachment: return .attachment(attachments[Int(cell.index)])
            case .removed, .present: return .none
            }
        case .contribution, .baseline: return .value(values[Int(cell.index)])
        }
    }
}
