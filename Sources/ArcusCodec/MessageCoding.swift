import ArcusCRDT

// The payload of each message type. Optional parts are announced by a flags varint first.

extension EncodingContext {
    mutating func writePayload(_ message: SyncMessage, to w: inout ByteWriter) {
        switch message {
        case .hello(let hello):
            w.writeLengthPrefixed(hello.peerID)
            w.writeVarint(UInt64(hello.protocolVersion))
            w.writeVarint(hello.capabilities.count)
            for capability in hello.capabilities { w.writeString(capability) }
            w.writeString(hello.name)
        case .subscribe(let subscribe):
            w.writeVarint(subscribe.subscriptionID)
            w.writeString(subscribe.query)
            writeValue(subscribe.arguments, to: &w)
        case .unsubscribe(let id):
            w.writeVarint(id)
        case .summary(let summary):
            w.writeVarint(summary.subscriptionID)
            writeVersion(summary.version, to: &w)
            w.writeLengthPrefixed(summary.digest)
        case .deltaBatch(let batch):
            writeBatch(batch, to: &w)
        case .ack(let ack):
            w.writeVarint(ack.position)
        case .attachmentRequest(let request):
            w.writeLengthPrefixed(request.hash)
            w.writeVarint(request.offset)
            w.writeVarint(UInt64(request.chunkSize))
        case .attachmentChunk(let chunk):
            w.writeLengthPrefixed(chunk.hash)
            w.writeVarint(chunk.offset)
            w.writeVarint(chunk.totalLength)
            w.writeLengthPrefixed(chunk.bytes)
        case .error(let error):
            w.writeVarint(UInt64(error.code))
            w.writeString(error.message)
        }
    }

    public mutating func writeVersion(_ version: VersionVector, to w: inout ByteWriter) {
        w.writeVarint(version.count)
        for element in version.elements {
            writeSite(element.site, to: &w)
            writeTime(element.time, to: &w)
        }
    }

    mutating func writeBatch(_ batch: DeltaBatch, to w: inout ByteWriter) {
        var order = batch.documents.indices.filter { i in
            batch.since.map { !batch.documents[i].state.version.isCovered(by: $0) } ?? true
        }
        // Sorted by key, so consecutive ids share prefixes (and receivers can check order).
        // Senders that list documents in key order already skip the sort.
        let sorted = zip(order, order.dropFirst()).allSatisfy { batch.documents[$0].key < batch.documents[$1].key }
        if !sorted { order.sort { batch.documents[$0].key < batch.documents[$1].key } }
        // What each document sends, selected once for the vocabulary and the writing.
        var selected: [Cell] = []
        var ranges: [Range<Int>] = []
        if let since = batch.since {
            ranges.reserveCapacity(order.count)
            for i in order {
                batch.documents[i].state.selectCells(since: since, into: &scratchCells, open: &scratchOpen)
                ranges.append(selected.count..<selected.count + scratchCells.count)
                selected.append(contentsOf: scratchCells)
            }
        }
        let vocabulary = newFieldNames(order.enumerated().lazy.map { k, i in
            (batch.documents[i].state, batch.since == nil ? batch.documents[i].state.cells[...] : selected[ranges[k]])
        })
        var flags: UInt64 = 0
        if batch.covers != nil { flags |= 1 }
        if batch.position != nil { flags |= 2 }
        if !vocabulary.isEmpty { flags |= 4 }
        w.writeVarint(flags)
        if let covers = batch.covers { writeVersion(covers, to: &w) }
        if let position = batch.position { w.writeVarint(position) }
        if !vocabulary.isEmpty {
            w.writeVarint(vocabulary.count)
            for name in vocabulary {
                w.writeString(name)
                if budget.admit(tableCount: fieldNames.count, byteCount: name.utf8.count) { fieldNames.add(name) }
            }
        }
        w.writeVarint(order.count)
        for (k, i) in order.enumerated() {
            writeKey(batch.documents[i].key, to: &w)
            if batch.since == nil {
                writeDocument(batch.documents[i].state, cells: batch.documents[i].state.cells, range: batch.documents[i].state.cells.indices, since: nil, to: &w)
            } else {
                writeDocument(batch.documents[i].state, cells: selected, range: ranges[k], since: batch.since, to: &w)
            }
        }
    }

    /// The field names a batch uses that the session has not interned yet, most used first: the
    /// batch announces them up front (its vocabulary), so the commonest names get the small
    /// indices that the compact field forms need.
    func newFieldNames(_ documents: some Sequence<(DocumentState, ArraySlice<Cell>)>) -> [String] {
        var uses: [String: Int] = [:]
        for (state, cells) in documents {
            for cell in cells where cell.kind == .field {
                let name = state.names[Int(cell.index)]
                if fieldNames.index(of: name) == nil { uses[name, default: 0] += 1 }
            }
        }
        return uses.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map(\.key)
    }

    /// A document's key: one head varint, then what it announces.
    ///
    ///     head bit 0      the collection differs from the previous key's (its name follows)
    ///     head bits 1–2   0: a string id sharing a prefix with the previous string id
    ///                     1: a string id that is the previous one's number stepped up
    ///                        (`d00124` after `d00123`: same stem, same digit count)
    ///                     2: any other id, as a value
    ///                     3: the previous string id again (the next update to one document)
    ///     head bits 3…    kind 0: the shared prefix length (the rest follows, length-prefixed)
    ///                     kind 1: the step minus one
    ///
    /// Keys go out sorted, so a run of sequential ids costs one byte each.
    mutating func writeKey(_ key: DocumentKey, to w: inout ByteWriter) {
        let newCollection = key.collection != lastCollection
        let collectionBit: UInt64 = newCollection ? 1 : 0
        guard case .string(var s) = key.id else {
            w.writeVarint(2 << 1 | collectionBit)
            if newCollection { writeCollection(key.collection, to: &w) }
            lastCollection = key.collection
            writeValue(key.id, to: &w)
            return
        }
        s.withUTF8 { bytes in
            if bytes.elementsEqual(lastDocumentID) {
                w.writeVarint(3 << 1 | collectionBit)
                if newCollection { writeCollection(key.collection, to: &w) }
            } else if let step = DocumentIDStep.step(from: lastDocumentID, to: bytes) {
                w.writeVarint((step - 1) << 3 | 1 << 1 | collectionBit)
                if newCollection { writeCollection(key.collection, to: &w) }
            } else {
                var shared = 0
                let limit = min(bytes.count, lastDocumentID.count)
                while shared < limit && bytes[shared] == lastDocumentID[shared] { shared += 1 }
                w.writeVarint(UInt64(shared) << 3 | collectionBit)
                if newCollection { writeCollection(key.collection, to: &w) }
                w.writeLengthPrefixed(UnsafeBufferPointer(rebasing: bytes[shared...]))
            }
            lastDocumentID.removeAll(keepingCapacity: true)
            lastDocumentID.append(contentsOf: bytes)
        }
        lastCollection = key.collection
    }
}

/// Sequential ids: a stem, then a run of decimal digits of fixed width.
enum DocumentIDStep {
    /// The trailing digits of `bytes`: where they start and their value (nil: none, or too many).
    static func digits(_ bytes: some Collection<UInt8>) -> (start: Int, value: UInt64)? {
        var start = bytes.count
        for byte in bytes.reversed() {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { break }
            start -= 1
        }
        let width = bytes.count - start
        guard width > 0, width <= 18 else { return nil }
        var value: UInt64 = 0
        for byte in bytes.dropFirst(start) { value = value * 10 + UInt64(byte - UInt8(ascii: "0")) }
        return (start, value)
    }

    /// How far `current` steps up from `previous`, if it is the same stem and digit count with a
    /// larger number.
    static func step(from previous: [UInt8], to current: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard previous.count == current.count, let a = digits(previous), let b = digits(current),
            a.start == b.start, b.value > a.value, previous[0..<a.start].elementsEqual(current[0..<b.start])
        else { return nil }
        return b.value - a.value
    }

    /// The id `step` above `previous`, keeping its width; nil if the number would overflow it.
    static func apply(_ step: UInt64, to previous: [UInt8]) -> [UInt8]? {
        guard let (start, value) = digits(previous) else { return nil }
        let (next, overflow) = value.addingReportingOverflow(step)
        guard !overflow else { return nil }
        let text = Array(String(next).utf8)
        let width = previous.count - start
        guard text.count <= width else { return nil }
        return Array(previous[0..<start]) + Array(repeating: UInt8(ascii: "0"), count: width - text.count) + text
    }
}

extension DecodingContext {
    mutating func readPayload(_ type: MessageType, from r: inout ByteReader) throws(CodecError) -> SyncMessage {
        switch type {
        case .hello:
            let peerID = try r.readLengthPrefixed(limit: 64)
            let version = try r.readVarint()
            guard version <= UInt64(UInt16.max) else { throw .invalidValue("protocol version out of range") }
            let count = try r.readCount("capabilities", limit: 256)
            var capabilities: [String] = []
            for _ in 0..<count { capabilities.append(try r.readString(limit: 256)) }
            let name = try r.readString(limit: 256)
            return .hello(Hello(peerID: peerID, protocolVersion: UInt16(version), capabilities: capabilities, name: name))
        case .subscribe:
            let id = try r.readVarint()
            let query = try r.readString(limit: limits.maximumStringLength)
            let arguments = try readValue(from: &r)
            return .subscribe(Subscribe(subscriptionID: id, query: query, arguments: arguments))
        case .unsubscribe:
            return .unsubscribe(subscriptionID: try r.readVarint())
        case .summary:
            let id = try r.readVarint()
            let version = try readVersion(from: &r)
            let digest = try r.readLengthPrefixed(limit: 1024)
            return .summary(Summary(subscriptionID: id, version: version, digest: digest))
        case .deltaBatch:
            return .deltaBatch(try readBatch(from: &r))
        case .ack:
            return .ack(Ack(position: try r.readVarint()))
        case .attachmentRequest:
            let hash = try r.readLengthPrefixed(limit: 64)
            let offset = try r.readVarint()
            let size = try r.readVarint()
            guard size <= UInt64(UInt32.max) else { throw .invalidValue("chunk size out of range") }
            return .attachmentRequest(AttachmentRequest(hash: hash, offset: offset, chunkSize: UInt32(size)))
        case .attachmentChunk:
            let hash = try r.readLengthPrefixed(limit: 64)
            let offset = try r.readVarint()
            let total = try r.readVarint()
            let bytes = try r.readLengthPrefixed(limit: limits.maximumFrameLength)
            return .attachmentChunk(AttachmentChunk(hash: hash, offset: offset, totalLength: total, bytes: bytes))
        case .error:
            let code = try r.readVarint()
            guard code <= UInt64(UInt32.max) else { throw .invalidValue("error code out of range") }
            return .error(SyncError(code: UInt32(code), message: try r.readString(limit: 4096)))
        }
    }

    public mutating func readVersion(from r: inout ByteReader) throws(CodecError) -> VersionVector {
        let count = try r.readCount("version vector entries", limit: limits.maximumInternedItems, minimumItemSize: 2)
        var entries: [SiteID: Timestamp] = [:]
        entries.reserveCapacity(count)
        for _ in 0..<count {
            let site = try readSite(from: &r)
            let time = try readTime(from: &r)
            guard entries.updateValue(time, forKey: site) == nil else { throw .invalidValue("site twice in a version vector") }
        }
        return VersionVector(entries)
    }

    mutating func readBatch(from r: inout ByteReader) throws(CodecError) -> DeltaBatch {
        let flags = try r.readVarint()
        guard flags & ~7 == 0 else { throw .invalidValue("unknown delta batch flags \(flags)") }
        let covers = flags & 1 != 0 ? try readVersion(from: &r) : nil
        let position = flags & 2 != 0 ? try r.readVarint() : nil
        // Bounded by the bytes left: names past the intern budget are announced, just not kept.
        let vocabulary = flags & 4 != 0 ? try r.readCount("vocabulary", limit: .max) : 0
        for _ in 0..<vocabulary {
            let name = try r.readString(limit: limits.maximumStringLength)
            if budget.admit(tableCount: fieldNames.count, byteCount: name.utf8.count) { fieldNames.add(name) }
        }
        let count = try r.readCount("documents in a batch", limit: limits.maximumDocumentsPerBatch, minimumItemSize: 3)
        // The documents share one set of tables; each gets its cells and version.
        var doc = DocumentDecoding()
        var parts: [(key: DocumentKey, cells: [Cell], version: VersionVector)] = []
        parts.reserveCapacity(count)
        for _ in 0..<count {
            let key = try readKey(from: &r)
            // Writers send keys in strictly increasing order; anything else (a repeat, say) is
            // not a batch this protocol makes.
            if let previous = parts.last?.key, !(previous < key) {
                throw .invalidValue("document \(key) out of order or repeated in a batch")
            }
            try readDocument(from: &r, into: &doc)
            parts.append((key, doc.cells, doc.version))
        }
        let documents = parts.map { part in
            DocumentDelta(key: part.key, state: DocumentState(
                validatedCells: part.cells, names: doc.names, values: doc.values, attachments: doc.attachments, version: part.version))
        }
        return DeltaBatch(documents: documents, covers: covers, position: position)
    }

    mutating func readKey(from r: inout ByteReader) throws(CodecError) -> DocumentKey {
        let head = try r.readVarint()
        if head & 1 != 0 {
            lastCollection = try readCollection(from: &r)
        } else if lastCollection == nil {
            throw .invalidValue("a document key without a collection")
        }
        let collection = lastCollection!
        switch (head >> 1) & 3 {
        case 0:
            let shared = head >> 3
            guard shared <= UInt64(lastDocumentID.count) else {
                throw .limitExceeded(what: "shared id prefix", value: shared, limit: UInt64(lastDocumentID.count))
            }
            let rest = try r.readLengthPrefixed(limit: limits.maximumStringLength)
            lastDocumentID.removeSubrange(Int(shared)...)
            lastDocumentID.append(contentsOf: rest)
        case 1:
            guard let next = DocumentIDStep.apply((head >> 3) &+ 1, to: lastDocumentID), head >> 3 < UInt64.max else {
                throw .invalidValue("a sequential id step that does not fit the previous id")
            }
            lastDocumentID = next
        case 2:
            guard head >> 3 == 0 else { throw .invalidValue("document key head \(head)") }
            return DocumentKey(collection: collection, id: try readValue(from: &r))
        default:
            guard head >> 3 == 0 else { throw .invalidValue("document key head \(head)") }
        }
        guard let id = String(validating: lastDocumentID, as: UTF8.self) else { throw .invalidUTF8(offset: r.offset) }
        return DocumentKey(collection: collection, id: .string(id))
    }
}
