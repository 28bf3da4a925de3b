import ArcusCRDT

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
        try allowance.charge(Int(count), each: DecodedCost.stamp)
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
            try append(to: &doc, Cell(kind: .marker, depth: level, flag: markerKind == 3 ? .removed : .present, order: order, event: event))
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
                    name = try readString(from: &r, limit: limits.maximumStringLength)
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
            try allowance.charge(DecodedCost.name)
            try append(to: &doc, .field(depth: level, name: doc.nameIndex(name, session: sessionIndex)))
            if first >= FieldEntry.compactValue {
                let order = try doc.stamp(UInt64(first & 3))
                try allowance.charge(DecodedCost.value)
                doc.values.append(try readValue(from: &r, depth: depth + 1))
                try append(to: &doc, Cell(kind: .register, depth: level, flag: .value, index: UInt32(doc.values.count - 1), order: order, event: order))
                doc.version.observe(order)
            } else if first >= FieldEntry.compactRemoved {
                let order = try doc.stamp(UInt64(first & 3))
                guard let event = doc.stamps.last else { throw .badReference(what: "document stamp", index: 0) }
                try append(to: &doc, Cell(kind: .register, depth: level, flag: .removed, order: order, event: event))
                doc.version.observe(event)
            } else if first >= FieldEntry.compactCounter {
                guard let stamp = doc.stamps.last else { throw .badReference(what: "document stamp", index: 0) }
                guard case let total? = Number(try readValue(from: &r, depth: limits.maximumDepth)) else {
                    throw .invalidValue("a counter amount that is not a number")
                }
                try allowance.charge(DecodedCost.value)
                doc.values.append(total.value)
                try append(to: &doc, Cell(kind: .contribution, depth: level, index: UInt32(doc.values.count - 1), order: stamp, event: stamp))
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
                try allowance.charge(DecodedCost.value)
                doc.values.append(try readValue(from: &r, depth: depth + 1))
                try append(to: &doc, Cell(kind: .register, depth: level, flag: .value, index: UInt32(doc.values.count - 1), order: order, event: event))
            case .attachment, .attachmentWithEvent:
                try allowance.charge(DecodedCost.attachment)
                doc.attachments.append(try readToken(from: &r))
                try append(to: &doc, Cell(kind: .register, depth: level, flag: .attachment, index: UInt32(doc.attachments.count - 1), order: order, event: event))
            case .removed:
                try append(to: &doc, Cell(kind: .register, depth: level, flag: .removed, order: order, event: event))
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
                try allowance.charge(DecodedCost.value)
                doc.values.append(total.value)
                try append(to: &doc, Cell(kind: .contribution, depth: level, index: UInt32(doc.values.count - 1), order: stamp, event: stamp))
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
                try allowance.charge(DecodedCost.value)
                doc.values.append(total.value)
                try append(to: &doc, Cell(kind: .baseline, depth: level, index: UInt32(doc.values.count - 1), order: stamp, event: event))
                doc.version.observe(event)
            }
            guard contributions + baselines > 0 else { throw .invalidValue("an empty counter in a slot") }
        }
        doc.cells.append(contentsOf: nested)
    }

    /// Appends a cell to `doc`, charging it first.
    @inline(__always)
    private mutating func append(to doc: inout DocumentDecoding, _ cell: Cell) throws(CodecError) {
        try allowance.charge(DecodedCost.cell)
        doc.cells.append(cell)
    }

    mutating func readToken(from r: inout ByteReader) throws(CodecError) -> AttachmentToken {
        let hash = try readBytes(from: &r, limit: 64)
        let length = Int64(bitPattern: try r.readVarint())
        guard length >= 0 else { throw .invalidValue("negative attachment length") }
        let count = try r.readCount("attachment metadata", limit: 1024, minimumItemSize: 2)
        try allowance.charge(count, each: DecodedCost.objectEntry)
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
