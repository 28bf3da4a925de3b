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
            if let site = SiteID(peerID: hello.peerID) { intern(site) }
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
            // Optional and last: present when bytes remain.
            if let position = summary.position { w.writeVarint(position) }
        case .deltaBatch(let batch):
            writeBatch(batch, to: &w)
        case .ack(let ack):
            w.writeVarint(ack.subscriptionID)
            w.writeVarint(ack.position)
        case .attachmentRequest(let request):
            w.writeLengthPrefixed(request.hash)
            w.writeVarint(request.offset)
            w.writeVarint(UInt64(request.chunkSize))
            w.writeVarint(UInt64(request.hops))
            // Last, and only when known: a peer that predates it reads the request without it.
            if let length = request.length { w.writeVarint(length) }
        case .attachmentChunk(let chunk):
            w.writeLengthPrefixed(chunk.hash)
            w.writeVarint(chunk.offset)
            w.writeVarint(chunk.totalLength)
            w.writeLengthPrefixed(chunk.bytes)
        case .error(let error):
            w.writeVarint(UInt64(error.code))
            w.writeString(error.message)
        case .missing(let missing):
            w.writeVarint(missing.subscriptionID)
            w.writeVarint(missing.keys.count)
            for key in missing.keys { writeKey(key, to: &w) }
        case .credentials(let credentials):
            w.writeVarint(credentials.items.count)
            for item in credentials.items {
                w.writeVarint(UInt64(item.kind))
                w.writeLengthPrefixed(item.bytes)
            }
        case .pushNote(let note):
            w.writeVarint(note.lazy.count)
            for id in note.lazy { w.writeVarint(id) }
            w.writeVarint(note.eager.count)
            for id in note.eager { w.writeVarint(id) }
            w.writeVarint(note.refused.count)
            for id in note.refused { w.writeVarint(id) }
            w.writeVarint(note.has.count)
            // In key order (the reader checks it), so consecutive ids share prefixes.
            for document in note.has.sorted(by: { $0.key < $1.key }) {
                writeKey(document.key, to: &w)
                writeVersion(document.version, to: &w)
            }
        case .reapedHorizon(let horizon):
            w.writeVarint(horizon.subscriptionID)
            writeVersion(horizon.horizon, to: &w)
            w.writeVarint(horizon.answersCheck ? 1 : 0)
            w.writeVarint(horizon.held.count)
            for document in horizon.held.sorted(by: { $0.key < $1.key }) {
                writeKey(document.key, to: &w)
                w.writeVarint(document.events.count)
                for event in document.events.sorted() { writeStamp(event, to: &w) }
            }
            w.writeVarint(horizon.unknown.count)
            for key in horizon.unknown.sorted() { writeKey(key, to: &w) }
        case .reapCheck(let check):
            w.writeVarint(check.subscriptionID)
            w.writeVarint(check.keys.count)
            for key in check.keys.sorted() { writeKey(key, to: &w) }
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
        // Through a pointer: indexing the array would copy each document (and retain its tables)
        // on every access.
        batch.documents.withUnsafeBufferPointer { documents in
            writeBatch(documents, since: batch.since, covers: batch.covers, position: batch.position, subscriptionID: batch.subscriptionID,
                       answers: batch.answers, backlog: batch.backlog, to: &w)
        }
    }

    private mutating func writeBatch(
        _ documents: UnsafeBufferPointer<DocumentDelta>, since: VersionVector?, covers: VersionVector?, position: UInt64?,
        subscriptionID: UInt64, answers: UInt64, backlog: SyncBacklog?, to w: inout ByteWriter
    ) {
        var order = documents.indices.filter { i in
            since.map { !documents[i].state.version.isCovered(by: $0) } ?? true
        }
        // Sorted by key, so consecutive ids share prefixes (and receivers can check order).
        // Senders that list documents in key order already skip the sort.
        let sorted = zip(order, order.dropFirst()).allSatisfy { documents[$0].key < documents[$1].key }
        if !sorted { order.sort { documents[$0].key < documents[$1].key } }
        // What each document sends (copies of its cells, field names renumbered for the batch),
        // gathered once for the vocabulary and the writing.
        var scratch = DocumentWriterScratch()
        swap(&scratch, &writerScratch)
        scratch.cells.removeAll(keepingCapacity: true)
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(order.count)
        var names = BatchNames()
        for i in order {
            let start = scratch.cells.count
            documents[i].state.cells.withUnsafeBufferPointer { cells in
                if let since {
                    DocumentState.appendCells(cells, since: since, to: &scratch.cells, open: &scratch.open)
                } else {
                    scratch.cells.append(contentsOf: cells)
                }
            }
            names.number(&scratch.cells, start..<scratch.cells.count, from: documents[i].state.names)
            ranges.append(start..<scratch.cells.count)
        }
        let vocabulary = newFieldNames(&names)
        var flags: UInt64 = 0
        if covers != nil { flags |= 1 }
        if position != nil { flags |= 2 }
        if !vocabulary.isEmpty { flags |= 4 }
        if subscriptionID != 0 { flags |= 8 }
        if answers != 0 { flags |= 16 }
        if backlog != nil { flags |= 32 }
        w.writeVarint(flags)
        if let covers { writeVersion(covers, to: &w) }
        if let position { w.writeVarint(position) }
        if subscriptionID != 0 { w.writeVarint(subscriptionID) }
        if answers != 0 { w.writeVarint(answers) }
        if let backlog {
            w.writeVarint(backlog.documents)
            w.writeVarint(backlog.bytes)
        }
        if !vocabulary.isEmpty {
            w.writeVarint(vocabulary.count)
            for id in vocabulary {
                let name = names.name(id)
                w.writeString(name)
                if budget.admit(tableCount: fieldNames.count, byteCount: name.utf8.count) {
                    fieldNames.add(name, hash: names.hash(id))
                    names.session[id] = fieldNames.count - 1
                }
            }
        }
        w.writeVarint(order.count)
        scratch.cells.withUnsafeBufferPointer { selected in
            for (k, i) in order.enumerated() {
                writeKey(documents[i].key, to: &w)
                // Each table through a pointer of its own: a copy of the state would retain them all.
                documents[i].state.values.withUnsafeBufferPointer { values in
                    documents[i].state.attachments.withUnsafeBufferPointer { attachments in
                        let document = DocumentSource(cells: UnsafeBufferPointer(rebasing: selected[ranges[k]]), values: values, attachments: attachments)
                        writeDocument(document, knowledge: documents[i].state.version, since: since, names: &names,
                                      stamps: &scratch.stamps, extra: &scratch.extra, to: &w)
                    }
                }
            }
        }
        swap(&scratch, &writerScratch)
    }

    /// The batch's field names that the session has not interned yet, most used first: the
    /// batch announces them up front (its vocabulary), so the commonest names get the small
    /// indices that the compact field forms need. Notes the session index of the others.
    private func newFieldNames(_ names: inout BatchNames) -> [Int] {
        var new: [Int] = []
        for id in 0..<names.count {
            if let index = fieldNames.index(of: names.name(id), hash: names.hash(id)) {
                names.session[id] = index
            } else {
                new.append(id)
            }
        }
        let uses = names.uses
        new.sort { a, b in uses[a] != uses[b] ? uses[a] > uses[b] : names.name(a) < names.name(b) }
        return new
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

extension DecodingContext {
    mutating func readPayload(_ type: MessageType, from r: inout ByteReader) throws(CodecError) -> SyncMessage {
        switch type {
        case .hello:
            let peerID = try readBytes(from: &r, limit: 64)
            let version = try r.readVarint()
            guard version <= UInt64(UInt16.max) else { throw .invalidValue("protocol version out of range") }
            let count = try r.readCount("capabilities", limit: 256)
            try allowance.charge(count, each: DecodedCost.name)
            var capabilities: [String] = []
            for _ in 0..<count { capabilities.append(try readString(from: &r, limit: 256)) }
            let name = try readString(from: &r, limit: 256)
            if let site = SiteID(peerID: peerID) { intern(site) }
            return .hello(Hello(peerID: peerID, protocolVersion: UInt16(version), capabilities: capabilities, name: name))
        case .subscribe:
            let id = try r.readVarint()
            let query = try readString(from: &r, limit: limits.maximumStringLength)
            let arguments = try readValue(from: &r)
            return .subscribe(Subscribe(subscriptionID: id, query: query, arguments: arguments))
        case .unsubscribe:
            return .unsubscribe(subscriptionID: try r.readVarint())
        case .summary:
            let id = try r.readVarint()
            let version = try readVersion(from: &r)
            let digest = try readBytes(from: &r, limit: 1024)
            let position = r.isAtEnd ? nil : try r.readVarint()
            return .summary(Summary(subscriptionID: id, version: version, digest: digest, position: position))
        case .deltaBatch:
            return .deltaBatch(try readBatch(from: &r))
        case .ack:
            let subscriptionID = try r.readVarint()
            return .ack(Ack(position: try r.readVarint(), subscriptionID: subscriptionID))
        case .attachmentRequest:
            let hash = try readBytes(from: &r, limit: 64)
            let offset = try r.readVarint()
            let size = try r.readVarint()
            guard size <= UInt64(UInt32.max) else { throw .invalidValue("chunk size out of range") }
            let hops = try r.readVarint()
            guard hops <= UInt64(UInt8.max) else { throw .invalidValue("hop count out of range") }
            let length = r.isAtEnd ? nil : try r.readVarint()
            guard length.map({ $0 <= UInt64(Int64.max) }) ?? true else { throw .invalidValue("attachment length out of range") }
            return .attachmentRequest(AttachmentRequest(hash: hash, offset: offset, chunkSize: UInt32(size), hops: UInt8(hops), length: length))
        case .attachmentChunk:
            let hash = try readBytes(from: &r, limit: 64)
            let offset = try r.readVarint()
            let total = try r.readVarint()
            let bytes = try readBytes(from: &r, limit: limits.maximumFrameLength)
            return .attachmentChunk(AttachmentChunk(hash: hash, offset: offset, totalLength: total, bytes: bytes))
        case .error:
            let code = try r.readVarint()
            guard code <= UInt64(UInt32.max) else { throw .invalidValue("error code out of range") }
            return .error(SyncError(code: UInt32(code), message: try readString(from: &r, limit: 4096)))
        case .missing:
            let id = try r.readVarint()
            return .missing(MissingDocuments(subscriptionID: id, keys: try readOrderedKeys("missing documents", limit: limits.maximumMissingKeys, from: &r)))
        case .credentials:
            let count = try r.readCount("credentials", limit: Credentials.maximumItems, minimumItemSize: 2)
            try allowance.charge(count, each: MemoryLayout<Credentials.Item>.stride)
            var items: [Credentials.Item] = []
            items.reserveCapacity(count)
            for _ in 0..<count {
                let kind = try r.readVarint()
                guard kind <= UInt64(UInt8.max) else { throw .invalidValue("credential kind \(kind) out of range") }
                items.append(Credentials.Item(kind: UInt8(kind), bytes: try readBytes(from: &r, limit: Credentials.maximumItemBytes)))
            }
            return .credentials(Credentials(items: items))
        case .pushNote:
            var lists: [[UInt64]] = []
            for what in ["lazy subscriptions", "eager subscriptions", "refused subscriptions"] {
                let count = try r.readCount(what, limit: PushNote.maximumSubscriptions - lists.reduce(0) { $0 + $1.count })
                try allowance.charge(count, each: MemoryLayout<UInt64>.stride)
                var ids: [UInt64] = []
                ids.reserveCapacity(count)
                for _ in 0..<count { ids.append(try r.readVarint()) }
                lists.append(ids)
            }
            // A key and a version take at least two bytes.
            let count = try r.readCount("noted documents", limit: PushNote.maximumDocuments, minimumItemSize: 2)
            try allowance.charge(count, each: DecodedCost.key)
            var has: [DocumentVersion] = []
            has.reserveCapacity(count)
            for _ in 0..<count {
                let key = try readKey(from: &r)
                if let previous = has.last?.key, !(previous < key) { throw .invalidValue("noted document \(key) out of order or repeated") }
                has.append(DocumentVersion(key: key, version: try readVersion(from: &r)))
            }
            return .pushNote(PushNote(lazy: lists[0], eager: lists[1], refused: lists[2], has: has))
        case .reapedHorizon:
            let id = try r.readVarint()
            let horizon = try readVersion(from: &r)
            let flag = try r.readVarint()
            guard flag <= 1 else { throw .invalidValue("reaped horizon flag \(flag) is neither 0 nor 1") }
            // A key and a count take at least two bytes.
            let count = try r.readCount("documents held", limit: ReapedHorizon.maximumDocuments, minimumItemSize: 2)
            try allowance.charge(count, each: DecodedCost.key)
            var held: [HeldEvents] = []
            held.reserveCapacity(count)
            var events = 0
            for _ in 0..<count {
                let key = try readKey(from: &r)
                if let previous = held.last?.key, !(previous < key) { throw .invalidValue("held document \(key) out of order or repeated") }
                let eventCount = try r.readCount("held events", limit: ReapedHorizon.maximumEvents - events)
                events += eventCount
                try allowance.charge(eventCount, each: MemoryLayout<Stamp>.stride)
                var stamps: [Stamp] = []
                stamps.reserveCapacity(eventCount)
                for _ in 0..<eventCount {
                    let stamp = try readStamp(from: &r)
                    if let previous = stamps.last, !(previous < stamp) { throw .invalidValue("held event \(stamp) out of order or repeated") }
                    stamps.append(stamp)
                }
                held.append(HeldEvents(key: key, events: stamps))
            }
            let unknown = try readOrderedKeys("documents not answered for", limit: ReapedHorizon.maximumDocuments - count, from: &r)
            return .reapedHorizon(ReapedHorizon(subscriptionID: id, horizon: horizon, held: held, unknown: unknown, answersCheck: flag == 1))
        case .reapCheck:
            let id = try r.readVarint()
            return .reapCheck(ReapCheck(subscriptionID: id, keys: try readOrderedKeys("documents to check", limit: ReapedHorizon.maximumDocuments, from: &r)))
        }
    }

    public mutating func readVersion(from r: inout ByteReader) throws(CodecError) -> VersionVector {
        let count = try r.readCount("version vector entries", limit: limits.maximumInternedItems, minimumItemSize: 2)
        try allowance.charge(count, each: DecodedCost.versionEntry)
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
        guard flags & ~63 == 0 else { throw .invalidValue("unknown delta batch flags \(flags)") }
        let covers = flags & 1 != 0 ? try readVersion(from: &r) : nil
        let position = flags & 2 != 0 ? try r.readVarint() : nil
        let subscriptionID = flags & 8 != 0 ? try r.readVarint() : 0
        let answers = flags & 16 != 0 ? try r.readVarint() : 0
        let backlog = flags & 32 != 0 ? SyncBacklog(documents: try r.readVarint(), bytes: try r.readVarint()) : nil
        // Bounded by the bytes left: names past the intern budget are announced, just not kept.
        let vocabulary = flags & 4 != 0 ? try r.readCount("vocabulary", limit: .max) : 0
        for _ in 0..<vocabulary {
            let name = try readString(from: &r, limit: limits.maximumStringLength)
            if budget.admit(tableCount: fieldNames.count, byteCount: name.utf8.count) { fieldNames.add(name) }
        }
        let count = try r.readCount("documents in a batch", limit: limits.maximumDocumentsPerBatch, minimumItemSize: 3)
        try allowance.charge(count, each: DecodedCost.document)
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
        return DeltaBatch(documents: documents, covers: covers, position: position, subscriptionID: subscriptionID, answers: answers,
                          backlog: backlog)
    }

    /// A count, then that many document keys in strictly increasing order (`what` names them in
    /// errors). Bounded first, by count and then by the bytes of the ids: a key takes one byte and
    /// stands for a whole id.
    mutating func readOrderedKeys(_ what: String, limit: Int, from r: inout ByteReader) throws(CodecError) -> [DocumentKey] {
        let count = try r.readCount(what, limit: limit)
        try allowance.charge(count, each: DecodedCost.key)
        var keys: [DocumentKey] = []
        keys.reserveCapacity(count)
        for _ in 0..<count {
            let key = try readKey(from: &r)
            if let previous = keys.last, !(previous < key) { throw .invalidValue("\(what): \(key) out of order or repeated") }
            keys.append(key)
        }
        return keys
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
            // The id is refused by its length before any of it is copied.
            let restCount = try r.readVarint()
            let (length, overflow) = shared.addingReportingOverflow(restCount)
            guard !overflow, length <= UInt64(DocumentIDRules.maximumLength) else {
                throw .limitExceeded(what: "document id length", value: overflow ? .max : length, limit: UInt64(DocumentIDRules.maximumLength))
            }
            let rest = try r.readBytes(Int(restCount))
            lastDocumentID.removeSubrange(Int(shared)...)
            lastDocumentID.append(contentsOf: rest)
        case 1:
            guard head >> 3 < UInt64.max, DocumentIDStep.advance(&lastDocumentID, by: (head >> 3) &+ 1) else {
                throw .invalidValue("a sequential id step that does not fit the previous id")
            }
        case 2:
            guard head >> 3 == 0 else { throw .invalidValue("document key head \(head)") }
            let start = r.offset
            let id = try readValue(from: &r)
            // An id's JSON is never much shorter than its encoding: a long encoding is refused
            // before its JSON is made to measure it.
            guard r.offset - start <= 2 * DocumentIDRules.maximumLength else {
                throw .limitExceeded(what: "document id length", value: UInt64(r.offset - start), limit: UInt64(DocumentIDRules.maximumLength))
            }
            if let problem = DocumentIDRules.problem(with: id) { throw .invalidValue("a document key in \(collection): \(problem)") }
            return DocumentKey(collection: collection, id: id)
        default:
            guard head >> 3 == 0 else { throw .invalidValue("document key head \(head)") }
        }
        // Every key is a copy of its id, whatever it took on the wire (one byte, for a step).
        guard !lastDocumentID.isEmpty else { throw .invalidValue("a document key in \(collection) with an empty id") }
        try allowance.charge(DecodedCost.string(lastDocumentID.count))
        guard let id = lastDocumentID.withUnsafeBufferPointer({ UTF8Text.string($0) }) else { throw .invalidUTF8(offset: r.offset) }
        return DocumentKey(collection: collection, id: .string(id))
    }
}

extension SiteID {
    /// The site a hello's peer id names, when it is one (8 bytes, big-endian, not zero). A hello
    /// interns it in its direction's site table, as the next entry, so the version vectors
    /// and stamps that follow name the speaker in a byte rather than nine.
    public init?(peerID: [UInt8]) {
        guard peerID.count == 8 else { return nil }
        let raw = peerID.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard raw != 0 else { return nil }
        self.init(raw)
    }
}

extension EncodingContext {
    /// Adds a site both ends know without it being sent (the speaker's, from its hello; the
    /// listener's, once the speaker has its hello), so what follows names it in a byte. The
    /// decoding context of the other end must intern it at the same point of the stream.
    public mutating func intern(_ site: SiteID) {
        guard sites.index(of: site) == nil, budget.admit(tableCount: sites.count, byteCount: 8) else { return }
        sites.add(site)
    }
}

extension DecodingContext {
    /// The decoding half of `EncodingContext.intern(_:)`.
    public mutating func intern(_ site: SiteID) {
        guard !sites.items.contains(site), budget.admit(tableCount: sites.count, byteCount: 8) else { return }
        sites.add(site)
    }
}
