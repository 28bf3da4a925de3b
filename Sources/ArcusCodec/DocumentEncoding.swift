import ArcusCRDT

/// One document as the writer reads it: its cells (a copy, field cells numbered by
/// `BatchNames`) and the tables its payload cells index. Plain pointers, so the loops over
/// cells and values retain nothing.
struct DocumentSource {
    let cells: UnsafeBufferPointer<Cell>
    let values: UnsafeBufferPointer<Value>
    let attachments: UnsafeBufferPointer<AttachmentToken>
}

typealias FieldSpan = DocumentState.FieldSpan

/// Buffers the document writer reuses from one document to the next.
struct DocumentWriterScratch {
    /// The cells being written: copies, their field cells numbered by `names`.
    var cells: [Cell] = []
    var open: [DocumentState.OpenField] = []
    /// The stamp table of the document being written.
    var stamps: [Stamp] = []
    var extra: [Stamp] = []
    var names = BatchNames()
}

extension EncodingContext {
    /// Writes `state`; with `since`, only its events that `since` does not cover (the same
    /// bytes as writing `state.changes(since:)`).
    public mutating func writeDocument(_ state: DocumentState, since: VersionVector? = nil, to w: inout ByteWriter) {
        var scratch = DocumentWriterScratch()
        swap(&scratch, &writerScratch)
        scratch.cells.removeAll(keepingCapacity: true)
        state.cells.withUnsafeBufferPointer { cells in
            if let since {
                DocumentState.appendCells(cells, since: since, to: &scratch.cells, open: &scratch.open)
            } else {
                scratch.cells.append(contentsOf: cells)
            }
        }
        var names = BatchNames()
        swap(&names, &scratch.names)
        names.removeAll()
        names.number(&scratch.cells, 0..<scratch.cells.count, from: state.names)
        resolveSessionIndices(&names)
        scratch.cells.withUnsafeBufferPointer { cells in
            state.values.withUnsafeBufferPointer { values in
                state.attachments.withUnsafeBufferPointer { attachments in
                    let document = DocumentSource(cells: cells, values: values, attachments: attachments)
                    writeDocument(document, knowledge: state.version, since: since, names: &names, stamps: &scratch.stamps, extra: &scratch.extra, to: &w)
                }
            }
        }
        swap(&names, &scratch.names)
        swap(&scratch, &writerScratch)
    }

    /// Looks each of a batch's names up in the session's field names, once.
    func resolveSessionIndices(_ names: inout BatchNames) {
        for id in 0..<names.count {
            if let index = fieldNames.index(of: names.name(id), hash: names.hash(id)) { names.session[id] = index }
        }
    }

    /// Writes one document: `document.cells` are a copy of its cells (all or a selection) whose
    /// field cells `names` numbered; `stamps` and `extra` are scratch for its stamp table.
    mutating func writeDocument(
        _ document: DocumentSource, knowledge: VersionVector, since: VersionVector?, names: inout BatchNames,
        stamps: inout [Stamp], extra: inout [Stamp], to w: inout ByteWriter
    ) {
        StampTable.build(document.cells, knowledge: knowledge, since: since, stamps: &stamps, extra: &extra)
        stamps.withUnsafeBufferPointer { stamps in
            extra.withUnsafeBufferPointer { extra in
                let table = StampTable(stamps: stamps, extra: extra)
                let all = 0..<document.cells.count
                let root = Self.mapHeader(document.cells, all)
                var head = UInt64(root.count) << 5 | root.markerKind << 3 | UInt64(min(stamps.count, 3)) << 1
                if !extra.isEmpty { head |= 1 }
                w.writeVarint(head)
                if stamps.count >= 3 { w.writeVarint(stamps.count - 3) }
                for stamp in stamps { writeStamp(stamp, to: &w) }
                if !extra.isEmpty {
                    w.writeVarint(extra.count)
                    for stamp in extra { w.writeVarint(table.index(stamp)) }
                }
                writeMapBody(document, all, root, table, &names, to: &w)
            }
        }
    }

    /// A map's field count and marker kind (0 none, 1 present, 2 present with its own event,
    /// 3 removed).
    private static func mapHeader(_ cells: UnsafeBufferPointer<Cell>, _ range: Range<Int>) -> (count: Int, markerKind: UInt64) {
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
            i = DocumentState.span(in: cells, ofFieldAt: i, end: range.upperBound).end
        }
        return (count, markerKind)
    }

    private mutating func writeMap(
        _ document: DocumentSource, _ range: Range<Int>, _ table: StampTable, _ names: inout BatchNames, to w: inout ByteWriter
    ) {
        let header = Self.mapHeader(document.cells, range)
        w.writeVarint(UInt64(header.count) << 2 | header.markerKind)
        writeMapBody(document, range, header, table, &names, to: &w)
    }

    private mutating func writeMapBody(
        _ document: DocumentSource, _ range: Range<Int>, _ header: (count: Int, markerKind: UInt64), _ table: StampTable,
        _ names: inout BatchNames, to w: inout ByteWriter
    ) {
        let cells = document.cells
        var i = range.lowerBound
        if header.markerKind != 0 {
            let m = cells[i]
            w.writeVarint(table.index(m.order))
            if header.markerKind != 1 { w.writeVarint(table.index(m.event)) }
            i += 1
        }
        while i < range.upperBound {
            let span = DocumentState.span(in: cells, ofFieldAt: i, end: range.upperBound)
            let name = Int(cells[i].index)
            if !writeCompactField(name, document, span, table, &names, to: &w) {
                writeFieldEntryName(name, &names, to: &w)
                writeSlot(document, span, table, &names, to: &w)
            }
            i = span.end
        }
    }

    /// A batch name's index in the session's field names, if it has one.
    @inline(__always)
    private func sessionIndex(_ id: Int, _ names: inout BatchNames) -> Int? {
        let index = names.session[id]
        if index >= 0 { return index }
        // Interned after the batch looked (as an object value's key), or not at all.
        guard let index = fieldNames.index(of: names.name(id), hash: names.hash(id)) else { return nil }
        names.session[id] = index
        return index
    }

    /// The one-byte forms of the commonest fields (see `FieldEntry`); false when this field
    /// needs the general form.
    private mutating func writeCompactField(
        _ name: Int, _ document: DocumentSource, _ span: FieldSpan, _ table: StampTable, _ names: inout BatchNames,
        to w: inout ByteWriter
    ) -> Bool {
        guard span.nested.isEmpty, let nameIndex = sessionIndex(name, &names), nameIndex < 32 else { return false }
        let cells = document.cells
        if span.register == nil, span.counter.count == 1, cells[span.counter.lowerBound].kind == .contribution {
            let cell = cells[span.counter.lowerBound]
            guard table.index(cell.order) == table.stamps.count - 1 else { return false }
            w.write(FieldEntry.compactCounter | UInt8(nameIndex))
            writeValue(document.values[Int(cell.index)], to: &w)
            return true
        }
        guard let r = span.register, span.counter.isEmpty else { return false }
        let cell = cells[r]
        let orderIndex = table.index(cell.order)
        switch cell.flag {
        case .value where cell.order == cell.event && orderIndex < 4:
            w.write(FieldEntry.compactValue | UInt8(nameIndex) << 2 | UInt8(orderIndex))
            writeValue(document.values[Int(cell.index)], to: &w)
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
    private mutating func writeFieldEntryName(_ id: Int, _ names: inout BatchNames, to w: inout ByteWriter) {
        let index = sessionIndex(id, &names) ?? fieldNames.count
        if index < 31 {
            w.write(UInt8(index))
        } else {
            w.write(31)
            w.writeVarint(index - 31)
        }
        if index == fieldNames.count {
            let name = names.name(id)
            w.writeString(name)
            if budget.admit(tableCount: fieldNames.count, byteCount: name.utf8.count) {
                fieldNames.add(name, hash: names.hash(id))
                names.session[id] = fieldNames.count - 1
            }
        }
    }

    private mutating func writeSlot(
        _ document: DocumentSource, _ span: FieldSpan, _ table: StampTable, _ names: inout BatchNames, to w: inout ByteWriter
    ) {
        let cells = document.cells
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
            case .value: writeValue(document.values[Int(cell.index)], to: &w)
            case .attachment: writeToken(document.attachments[Int(cell.index)], to: &w)
            case .removed, .present: break
            }
        }
        if !span.nested.isEmpty { writeMap(document, span.nested, table, &names, to: &w) }
        if !span.counter.isEmpty {
            var contributions = 0
            for i in span.counter where cells[i].kind == .contribution { contributions += 1 }
            w.writeVarint(contributions)
            for i in span.counter where cells[i].kind == .contribution {
                w.writeVarint(table.index(cells[i].order))
                writeValue(document.values[Int(cells[i].index)], to: &w)
            }
            w.writeVarint(span.counter.count - contributions)
            for i in span.counter where cells[i].kind == .baseline {
                w.writeVarint(table.index(cells[i].order))
                w.writeVarint(table.index(cells[i].event))
                writeValue(document.values[Int(cells[i].index)], to: &w)
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
