import ArcusCRDT

/// The encoding of a `DocumentState` (a whole document or a delta):
///
///     document  := head, stamp* (ascending), [knowledge], [root marker stamps], field*
///     head      := varint: bit 0 knowledge present; bits 1–2 the stamp count, or 3 and a varint
///                  (count − 3) after the head; bits 3–4 the root's marker kind; bits 5… the
///                  root's field count
///     knowledge := count, (stamp index)* — version vector entries that the events do not imply
///     map       := varint(fieldCount << 2 | markerKind), [marker stamps], field*
///     field     := see `FieldEntry`; in the general form a name, then
///     slot      := header byte, [register], [map], [counter]
///
/// Every stamp of the document is listed once; entries name stamps by their index in that
/// list, usually inside the slot's header byte. Fields are written in name order.
///
/// Slot header: bit 0 register, bit 1 map, bit 2 counter; bits 3–5 the register's kind (0 value,
/// 1 value with its own event, 2 attachment, 3 attachment with its own event, 4 removed); bits
/// 6–7 the register's order index when below 3, else 3 and a varint (index − 3) follows.
/// Marker kinds: 0 none, 1 present, 2 present with its own event, 3 removed.
enum SlotBits {
    static let register: UInt8 = 1, map: UInt8 = 2, counter: UInt8 = 4
    static let kindShift: UInt8 = 3, orderShift: UInt8 = 6
}

/// The first byte of each field in a map:
///
///     1nnnnnoo   a register-only field holding a value written with one stamp: name index n
///                (below 32), order index o (below 4); the value follows
///     01nnnnoo   a register-only field removed by the document's latest stamp: name index n
///                (below 16), the removed value's order index o (below 4)
///     001nnnnn   a counter-only field with one contribution, made at the document's latest
///                stamp: name index n (below 32); the total follows
///     000xxxxx   the general form: the name (see `writeFieldEntryName`), then the slot header
enum FieldEntry {
    static let compactValue: UInt8 = 0x80
    static let compactRemoved: UInt8 = 0x40
    static let compactCounter: UInt8 = 0x20
}

enum RegisterKind: UInt8 {
    case value = 0, valueWithEvent, attachment, attachmentWithEvent, removed
}

extension DocumentState {
    /// The cells whose event `since` does not cover, with the field cells that lead to them, in
    /// pre-order: the layout of `changes(since:)`, indexing this state's tables. One pass with a
    /// stack of the fields open above the current cell.
    func selectCells(since: VersionVector, into selected: inout [Cell], open: inout [OpenField]) {
        selected.removeAll(keepingCapacity: true)
        open.removeAll(keepingCapacity: true)
        // A version vector has a handful of entries: scan them as plain integers.
        let known = since.elements
        cells.withUnsafeBufferPointer { cells in
            for i in cells.indices {
                let cell = cells[i]
                if cell.kind == .field {
                    while let top = open.last, top.depth >= cell.depth { open.removeLast() }
                    open.append(OpenField(index: i, depth: cell.depth, written: false))
                    continue
                }
                var covered = false
                for element in known where element.site == cell.event.site {
                    covered = cell.event.time <= element.time
                    break
                }
                if covered { continue }
                // Selected: first the open fields above it that are not written yet, outermost first.
                var first = open.count
                while first > 0 && !open[first - 1].written { first -= 1 }
                for k in first..<open.count {
                    selected.append(cells[open[k].index])
                    open[k].written = true
                }
                selected.append(cell)
            }
        }
    }

    /// A field whose subtree `selectCells` is reading; written out once a cell under it is selected.
    struct OpenField {
        var index: Int
        var depth: UInt8
        var written: Bool
    }
}

/// The distinct stamps of a document's cells, ascending, with their indices.
struct StampTable {
    var stamps: [Stamp] = []
    private var lookup: [Stamp: Int] = [:]
    /// Version-vector entries of the sent knowledge that the sent events do not imply.
    var extra: [Stamp] = []

    /// `knowledge` is the state's version, less what `since` covers.
    init(_ cells: [Cell], _ range: Range<Int>, knowledge: VersionVector, since: VersionVector?, scratch distinct: inout [Stamp]) {
        // A document's cells share a few stamps: collect the distinct ones by a short scan,
        // then sort that short list.
        distinct.removeAll(keepingCapacity: true)
        for i in range where cells[i].kind != .field {
            let cell = cells[i]
            Self.insert(cell.order, into: &distinct)
            if cell.event != cell.order { Self.insert(cell.event, into: &distinct) }
        }
        // Knowledge beyond the events written (an overwritten or removed write's event) goes in
        // the table too, so the receiver's version vector ends up the same as the sender's.
        for element in knowledge.elements {
            let known = Stamp(time: element.time, site: element.site)
            if let since, since.contains(known) { continue }
            var implied = false
            for i in range where cells[i].kind != .field && cells[i].event.site == known.site && cells[i].event.time >= known.time {
                implied = true
                break
            }
            if !implied {
                extra.append(known)
                Self.insert(known, into: &distinct)
            }
        }
        if distinct.count > 1 { distinct.sort() }
        if distinct.count > Self.scanLimit {
            // Past the scan limit `insert` appended without checking: drop the repeats.
            var unique: [Stamp] = []
            unique.reserveCapacity(distinct.count)
            for stamp in distinct where unique.last != stamp { unique.append(stamp) }
            distinct = unique
        }
        stamps = distinct
        if stamps.count > 16 {
            for (i, stamp) in stamps.enumerated() { lookup[stamp] = i }
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

    @inline(__always)
    func index(_ stamp: Stamp) -> Int {
        if stamps.count > 16 { return lookup[stamp]! }
        // Few stamps per document: a scan beats hashing.
        var i = 0
        while stamps[i] != stamp { i += 1 }
        return i
    }
}

extension EncodingContext {
    /// Writes `state`; with `since`, only its events that `since` does not cover (the same
    /// bytes as writing `state.changes(since:)`).
    public mutating func writeDocument(_ state: DocumentState, since: VersionVector? = nil, to w: inout ByteWriter) {
        var cells = state.cells
        if let since {
            state.selectCells(since: since, into: &scratchCells, open: &scratchOpen)
            swap(&cells, &scratchCells)
        }
        defer { if since != nil { swap(&cells, &scratchCells) } }
        writeDocument(state, cells: cells, range: 0..<cells.count, since: since, to: &w)
    }

    /// Writes the document made of `cells[range]` (all of `state`'s cells, or a selection of
    /// them sitting in a larger array).
    mutating func writeDocument(_ state: DocumentState, cells: [Cell], range: Range<Int>, since: VersionVector?, to w: inout ByteWriter) {
        let table = StampTable(cells, range, knowledge: state.version, since: since, scratch: &scratchStamps)
        let root = Self.mapHeader(cells, range)
        var head = UInt64(root.count) << 5 | root.markerKind << 3 | UInt64(min(table.stamps.count, 3)) << 1
        if !table.extra.isEmpty { head |= 1 }
        w.writeVarint(head)
        if table.stamps.count >= 3 { w.writeVarint(table.stamps.count - 3) }
        for stamp in table.stamps { writeStamp(stamp, to: &w) }
        if !table.extra.isEmpty {
            w.writeVarint(table.extra.count)
            for stamp in table.extra { w.writeVarint(table.index(stamp)) }
        }
        writeMapBody(cells, range, root, state, table, to: &w)
    }

    /// A map's field count and marker kind (0 none, 1 present, 2 present with its own event,
    /// 3 removed).
    private static func mapHeader(_ cells: [Cell], _ range: Range<Int>) -> (count: Int, markerKind: UInt64) {
        var i = range.lowerBound
        var markerKind: UInt64 = 0
        if i < range.upperBound, cells[i].kind == .marker {
            let m = cells[i]
            markerKind = m.isRemoved ? 3 : (m.order == m.event ? 1 : 2)
            i += 1
        }
        var count = 0
        while i < range.upperBound {
            count += 1
            i = DocumentState.span(in: cells, ofFieldAt: i).end
        }
        return (count, markerKind)
    }

    private mutating func writeMap(_ cells: [Cell], _ range: Range<Int>, _ state: DocumentState, _ table: StampTable, to w: inout ByteWriter) {
        let header = Self.mapHeader(cells, range)
        w.writeVarint(UInt64(header.count) << 2 | header.markerKind)
        writeMapBody(cells, range, header, state, table, to: &w)
    }

    private mutating func writeMapBody(
        _ cells: [Cell], _ range: Range<Int>, _ header: (count: Int, markerKind: UInt64), _ state: DocumentState, _ table: StampTable,
        to w: inout ByteWriter
    ) {
        let markerKind = header.markerKind
        var i = range.lowerBound
        if markerKind != 0 { i += 1 }
        let firstField = i
        if markerKind != 0 {
            let m = cells[range.lowerBound]
            w.writeVarint(table.index(m.order))
            if markerKind != 1 { w.writeVarint(table.index(m.event)) }
        }
        i = firstField
        while i < range.upperBound {
            let span = DocumentState.span(in: cells, ofFieldAt: i)
            let name = state.names[Int(cells[i].index)]
            if !writeCompactField(name, cells, span, state, table, to: &w) {
                writeFieldEntryName(name, to: &w)
                writeSlot(cells, span, state, table, to: &w)
            }
            i = span.end
        }
    }

    /// The one-byte forms of the commonest fields (see `FieldEntry`); false when this field
    /// needs the general form.
    private mutating func writeCompactField(
        _ name: String, _ cells: [Cell], _ span: DocumentState.FieldSpan, _ state: DocumentState, _ table: StampTable,
        to w: inout ByteWriter
    ) -> Bool {
        guard let nameIndex = fieldNames.index(of: name), nameIndex < 32, span.nested.isEmpty else { return false }
        if span.register == nil, span.counter.count == 1, cells[span.counter.lowerBound].kind == .contribution {
            let cell = cells[span.counter.lowerBound]
            guard table.index(cell.order) == table.stamps.count - 1 else { return false }
            w.write(FieldEntry.compactCounter | UInt8(nameIndex))
            writeValue(state.values[Int(cell.index)], to: &w)
            return true
        }
        guard let r = span.register, span.counter.isEmpty else { return false }
        let cell = cells[r]
        let orderIndex = table.index(cell.order)
        switch cell.flag {
        case .value where cell.order == cell.event && orderIndex < 4:
            w.write(FieldEntry.compactValue | UInt8(nameIndex) << 2 | UInt8(orderIndex))
            writeValue(state.values[Int(cell.index)], to: &w)
            return true
        case .removed where orderIndex < 4 && nameIndex < 16 && table.index(cell.event) == table.stamps.count - 1:
            w.write(FieldEntry.compactRemoved | UInt8(nameIndex) << 2 | UInt8(orderIndex))
            return true
        default:
            return false
        }
    }

    /// A field name in the general form: its index below 31 in one byte (the session's table
    /// size meaning "new name follows"), else 31 and a varint of the rest.
    private mutating func writeFieldEntryName(_ name: String, to w: inout ByteWriter) {
        let index = fieldNames.index(of: name) ?? fieldNames.count
        if index < 31 {
            w.write(UInt8(index))
        } else {
            w.write(31)
            w.writeVarint(index - 31)
        }
        if index == fieldNames.count {
            w.writeString(name)
            if budget.admit(tableCount: fieldNames.count, byteCount: name.utf8.count) { fieldNames.add(name) }
        }
    }

    private mutating func writeSlot(_ cells: [Cell], _ span: DocumentState.FieldSpan, _ state: DocumentState, _ table: StampTable, to w: inout ByteWriter) {
        var header: UInt8 = 0
        var orderIndex = 0
        var kind = RegisterKind.value
        if let r = span.register {
            let cell = cells[r]
            header |= SlotBits.register
            let same = cell.order == cell.event
            switch cell.flag {
            case .value: kind = same ? .value : .valueWithEvent
            case .attachment: kind = same ? .attachment : .attachmentWithEvent
            case .removed, .present: kind = .removed
            }
            orderIndex = table.index(cell.order)
            header |= kind.rawValue << SlotBits.kindShift
            header |= UInt8(min(orderIndex, 3)) << SlotBits.orderShift
        }
        if !span.counter.isEmpty { header |= SlotBits.counter }
        if !span.nested.isEmpty { header |= SlotBits.map }
        w.write(header)
        if let r = span.register {
            let cell = cells[r]
            if orderIndex >= 3 { w.writeVarint(orderIndex - 3) }
            if kind != .value && kind != .attachment { w.writeVarint(table.index(cell.event)) }
            switch cell.flag {
            case .value: writeValue(state.values[Int(cell.index)], to: &w)
            case .attachment: writeToken(state.attachments[Int(cell.index)], to: &w)
            case .removed, .present: break
            }
        }
        if !span.nested.isEmpty { writeMap(cells, span.nested, state, table, to: &w) }
        if !span.counter.isEmpty {
            var contributions = 0
            for i in span.counter where cells[i].kind == .contribution { contributions += 1 }
            w.writeVarint(contributions)
            for i in span.counter where cells[i].kind == .contribution {
                w.writeVarint(table.index(cells[i].order))
                writeValue(state.values[Int(cells[i].index)], to: &w)
            }
            w.writeVarint(span.counter.count - contributions)
            for i in span.counter where cells[i].kind == .baseline {
                w.writeVarint(table.index(cells[i].order))
                w.writeVarint(table.index(cells[i].event))
                writeValue(state.values[Int(cells[i].index)], to: &w)
            }
        }
    }

    mutating func writeToken(_ token: AttachmentToken, to w: inout ByteWriter) {
        w.writeLengthPrefixed(token.hash)
        w.writeVarint(UInt64(bitPattern: token.length))
        w.writeVarint(token.metadata.count)
        for key in token.metadata.keys.sorted() {
            writeFieldName(key, to: &w)
            writeStringValue(token.metadata[key]!, to: &w)
        }
    }
}

/// Builds documents' flat layouts while decoding, checking the layout's rules as it goes. The
/// tables (names, values, attachments) may be shared by all the documents of a batch, which
/// saves each document its own; `cells`, `stamps` and `version` are per document.
struct DocumentDecoding {
    var stamps: [Stamp] = []
    var cells: [Cell] = []
    var version = VersionVector()
    var names: [String] = []
    var values: [Value] = []
    var attachments: [AttachmentToken] = []
    /// Session field-name index → index in `names`, so each name is copied once per batch.
    var nameIndexBySession: [UInt32] = []

    mutating func nameIndex(_ name: String, session: Int?) -> UInt32 {
        guard let session else {
            names.append(name)
            return UInt32(names.count - 1)
        }
        if session >= nameIndexBySession.count {
            nameIndexBySession.append(contentsOf: repeatElement(.max, count: session + 1 - nameIndexBySession.count))
        }
        if nameIndexBySession[session] == .max {
            names.append(name)
            nameIndexBySession[session] = UInt32(names.count - 1)
        }
        return nameIndexBySession[session]
    }

    @inline(__always)
    func stamp(_ index: UInt64) throws(CodecError) -> Stamp {
        guard index < UInt64(stamps.count) else { throw .badReference(what: "document stamp", index: index) }
        return stamps[Int(index)]
    }
}

extension DecodingContext {
    public mutating func readDocument(from r: inout ByteReader) throws(CodecError) -> DocumentState {
        var doc = DocumentDecoding()
        try readDocument(from: &r, into: &doc)
        return DocumentState(validatedCells: doc.cells, names: doc.names, values: doc.values, attachments: doc.attachments, version: doc.version)
    }

    /// Reads one document into `doc`'s cells, stamps and version (replacing them), adding to
    /// its tables.
    mutating func readDocument(from r: inout ByteReader, into doc: inout DocumentDecoding) throws(CodecError) {
        let head = try r.readVarint()
        var count = (head >> 1) & 3
        if count == 3 {
            let (sum, overflow) = (try r.readVarint()).addingReportingOverflow(3)
            guard !overflow else { throw .limitExceeded(what: "document stamps", value: .max, limit: 0) }
            count = sum
        }
        let bound = UInt64(min(limits.maximumInternedItems, r.remaining))
        guard count <= bound else { throw .limitExceeded(what: "document stamps", value: count, limit: bound) }
        doc.stamps.removeAll(keepingCapacity: true)
        doc.cells = []
        doc.cells.reserveCapacity(16)
        doc.version = VersionVector()
        for _ in 0..<count { doc.stamps.append(try readStamp(from: &r)) }
        if head & 1 != 0 {
            let known = try r.readCount("document knowledge", limit: doc.stamps.count)
            for _ in 0..<known { doc.version.observe(try doc.stamp(try r.readVarint())) }
        }
        _ = try readMapBody(from: &r, header: head >> 3, depth: 0, into: &doc)
    }

    /// Reads one map; returns how many cells it added.
    private mutating func readMap(from r: inout ByteReader, depth: Int, into doc: inout DocumentDecoding) throws(CodecError) -> Int {
        try readMapBody(from: &r, header: try r.readVarint(), depth: depth, into: &doc)
    }

    /// Reads a map after its header (`fieldCount << 2 | markerKind`).
    private mutating func readMapBody(from r: inout ByteReader, header: UInt64, depth: Int, into doc: inout DocumentDecoding) throws(CodecError) -> Int {
        guard depth < limits.maximumDepth else { throw .tooDeep(limit: limits.maximumDepth) }
        let start = doc.cells.count
        let fieldCount = header >> 2
        // A field takes at least one byte (a compact removal).
        guard fieldCount <= UInt64(r.remaining) else {
            throw .limitExceeded(what: "map size", value: fieldCount, limit: UInt64(r.remaining))
        }
        let level = UInt8(depth)
        let markerKind = header & 3
        if markerKind != 0 {
            let order = try doc.stamp(try r.readVarint())
            let event = markerKind == 1 ? order : try doc.stamp(try r.readVarint())
            doc.cells.append(Cell(kind: .marker, depth: level, flag: markerKind == 3 ? .removed : .present, order: order, event: event))
            doc.version.observe(event)
        }
        var previous: String?
        for _ in 0..<fieldCount {
            let first = try r.readByte()
            let name: String
            var sessionIndex: Int?
            if first >= FieldEntry.compactCounter {
                let index = first >= FieldEntry.compactValue ? (first >> 2) & 31 : (first >= FieldEntry.compactRemoved ? (first >> 2) & 15 : first & 31)
                guard Int(index) < fieldNames.count else { throw .badReference(what: "field name", index: UInt64(index)) }
                name = fieldNames.items[Int(index)]
                sessionIndex = Int(index)
            } else {
                var index = UInt64(first)
                if first == 31 {
                    let (sum, overflow) = (try r.readVarint()).addingReportingOverflow(31)
                    guard !overflow else { throw .badReference(what: "field name", index: .max) }
                    index = sum
                }
                if let known = try fieldNames.resolve(index, what: "field name") {
                    name = known
                    sessionIndex = Int(index)
                } else {
                    name = try r.readString(limit: limits.maximumStringLength)
                    if budget.admit(tableCount: fieldNames.count, byteCount: name.utf8.count) {
                        fieldNames.add(name)
                        sessionIndex = fieldNames.count - 1
                    }
                }
            }
            if let previous, !(previous < name) {
                throw .invalidValue("field \"\(name)\" is out of order or appears twice in one map")
            }
            previous = name
            doc.cells.append(.field(depth: level, name: doc.nameIndex(name, session: sessionIndex)))
            if first >= FieldEntry.compactValue {
                let order = try doc.stamp(UInt64(first & 3))
                doc.values.append(try readValue(from: &r, depth: depth + 1))
                doc.cells.append(Cell(kind: .register, depth: level, flag: .value, index: UInt32(doc.values.count - 1), order: order, event: order))
                doc.version.observe(order)
            } else if first >= FieldEntry.compactRemoved {
                let order = try doc.stamp(UInt64(first & 3))
                guard let event = doc.stamps.last else { throw .badReference(what: "document stamp", index: 0) }
                doc.cells.append(Cell(kind: .register, depth: level, flag: .removed, order: order, event: event))
                doc.version.observe(event)
            } else if first >= FieldEntry.compactCounter {
                guard let stamp = doc.stamps.last else { throw .badReference(what: "document stamp", index: 0) }
                guard case let total? = Number(try readValue(from: &r, depth: limits.maximumDepth)) else {
                    throw .invalidValue("a counter amount that is not a number")
                }
                doc.values.append(total.value)
                doc.cells.append(Cell(kind: .contribution, depth: level, index: UInt32(doc.values.count - 1), order: stamp, event: stamp))
                doc.version.observe(stamp)
            } else {
                try readSlot(from: &r, depth: depth, into: &doc)
            }
        }
        return doc.cells.count - start
    }

    private mutating func readSlot(from r: inout ByteReader, depth: Int, into doc: inout DocumentDecoding) throws(CodecError) {
        let offset = r.offset
        let header = try r.readByte()
        guard header & 7 != 0 else { throw .unknownTag(what: "empty slot", tag: header, offset: offset) }
        let level = UInt8(depth)
        if header & SlotBits.register != 0 {
            guard let kind = RegisterKind(rawValue: (header >> SlotBits.kindShift) & 7) else {
                throw .unknownTag(what: "register kind", tag: header, offset: offset)
            }
            var orderIndex = UInt64(header >> SlotBits.orderShift)
            if orderIndex == 3 {
                let (sum, overflow) = (try r.readVarint()).addingReportingOverflow(3)
                guard !overflow else { throw .badReference(what: "document stamp", index: .max) }
                orderIndex = sum
            }
            let order = try doc.stamp(orderIndex)
            let event = kind == .value || kind == .attachment ? order : try doc.stamp(try r.readVarint())
            switch kind {
            case .value, .valueWithEvent:
                doc.values.append(try readValue(from: &r, depth: depth + 1))
                doc.cells.append(Cell(kind: .register, depth: level, flag: .value, index: UInt32(doc.values.count - 1), order: order, event: event))
            case .attachment, .attachmentWithEvent:
                doc.attachments.append(try readToken(from: &r))
                doc.cells.append(Cell(kind: .register, depth: level, flag: .attachment, index: UInt32(doc.attachments.count - 1), order: order, event: event))
            case .removed:
                doc.cells.append(Cell(kind: .register, depth: level, flag: .removed, order: order, event: event))
            }
            doc.version.observe(event)
        } else if header >> SlotBits.kindShift != 0 {
            throw .unknownTag(what: "slot", tag: header, offset: offset)
        }
        // The map comes before the counter on the wire, but after it in the layout.
        var nested: [Cell] = []
        if header & SlotBits.map != 0 {
            let mark = doc.cells.count
            guard try readMap(from: &r, depth: depth + 1, into: &doc) > 0 else {
                throw .invalidValue("an empty map in a slot")
            }
            nested = Array(doc.cells[mark...])
            doc.cells.removeSubrange(mark...)
        }
        if header & SlotBits.counter != 0 {
            let contributions = try r.readCount("counter contributions", limit: doc.stamps.count, minimumItemSize: 2)
            var lastSite: SiteID?
            for _ in 0..<contributions {
                let stamp = try doc.stamp(try r.readVarint())
                guard case let total? = Number(try readValue(from: &r, depth: limits.maximumDepth)) else {
                    throw .invalidValue("a counter amount that is not a number")
                }
                if let lastSite, !(lastSite < stamp.site) { throw .invalidValue("counter contributions out of site order") }
                lastSite = stamp.site
                doc.values.append(total.value)
                doc.cells.append(Cell(kind: .contribution, depth: level, index: UInt32(doc.values.count - 1), order: stamp, event: stamp))
                doc.version.observe(stamp)
            }
            let baselines = try r.readCount("counter baselines", limit: doc.stamps.count, minimumItemSize: 3)
            lastSite = nil
            for _ in 0..<baselines {
                let stamp = try doc.stamp(try r.readVarint())
                let event = try doc.stamp(try r.readVarint())
                guard case let total? = Number(try readValue(from: &r, depth: limits.maximumDepth)) else {
                    throw .invalidValue("a counter amount that is not a number")
                }
                if let lastSite, !(lastSite < stamp.site) { throw .invalidValue("counter baselines out of site order") }
                lastSite = stamp.site
                doc.values.append(total.value)
                doc.cells.append(Cell(kind: .baseline, depth: level, index: UInt32(doc.values.count - 1), order: stamp, event: event))
                doc.version.observe(event)
            }
            guard contributions + baselines > 0 else { throw .invalidValue("an empty counter in a slot") }
        }
        doc.cells.append(contentsOf: nested)
    }

    mutating func readToken(from r: inout ByteReader) throws(CodecError) -> AttachmentToken {
        let hash = try r.readLengthPrefixed(limit: 64)
        let length = Int64(bitPattern: try r.readVarint())
        guard length >= 0 else { throw .invalidValue("negative attachment length") }
        let count = try r.readCount("attachment metadata", limit: 1024, minimumItemSize: 2)
        var metadata: [String: String] = [:]
        for _ in 0..<count {
            let key = try readFieldName(from: &r)
            guard case .string(let value) = try readValue(from: &r, depth: limits.maximumDepth) else {
                throw .invalidValue("attachment metadata that is not a string")
            }
            metadata[key] = value
        }
        return AttachmentToken(hash: hash, length: length, metadata: metadata)
    }
}
