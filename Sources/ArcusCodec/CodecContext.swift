import ArcusCRDT

/// What one direction of a session has interned so far: sites, collection names, field names
/// and strings, and the last clock reading, so later frames refer to them in a byte or two.
///
/// Keep one `EncodingContext` per outgoing stream and one `DecodingContext` per incoming stream,
/// and encode and decode frames in the same order on both ends (a session delivers in order).
/// A frame that fails to decode leaves the context unusable: end the session.
public struct EncodingContext: Sendable {
    var sites = InternWriter<SiteID>()
    var collections = InternWriter<String>()
    var fieldNames = InternWriter<String>()
    var strings = InternWriter<String>()
    var budget: InternBudget
    var lastTime: Timestamp = .zero
    var lastDocumentID: [UInt8] = []
    var lastCollection: String?
    let limits: CodecLimits
    // Reused per document and per batch by the document writer.
    var writerScratch = DocumentWriterScratch()

    public init(limits: CodecLimits = .standard) {
        self.limits = limits
        budget = InternBudget(limits)
    }

    /// Forgets everything interned, as if newly made, but keeps the buffers: for encoding many
    /// independent streams (each document a store keeps on disk is one) without allocating.
    public mutating func restart() {
        sites.removeAll()
        collections.removeAll()
        fieldNames.removeAll()
        strings.removeAll()
        budget = InternBudget(limits)
        lastTime = .zero
        lastDocumentID.removeAll(keepingCapacity: true)
        lastCollection = nil
    }
}

public struct DecodingContext: Sendable {
    var sites = InternReader<SiteID>()
    var collections = InternReader<String>()
    var fieldNames = InternReader<String>()
    var strings = InternReader<String>()
    var budget: InternBudget
    var lastTime: Timestamp = .zero
    var lastDocumentID: [UInt8] = []
    var lastCollection: String?
    let limits: CodecLimits
    /// What the frame being decoded may still make (`FrameDecoder` sets it for each frame).
    var allowance = DecodeAllowance.unlimited

    public init(limits: CodecLimits = .standard) {
        self.limits = limits
        budget = InternBudget(limits)
    }
}

extension DecodingContext {
    /// A length-prefixed UTF-8 string of at most `limit` bytes, charged to the allowance before
    /// it is made.
    mutating func readString(from r: inout ByteReader, limit: Int) throws(CodecError) -> String {
        let count = try r.readCount("string length", limit: limit)
        try allowance.charge(DecodedCost.string(count))
        return try r.readString(byteCount: count)
    }

    /// Length-prefixed bytes, at most `limit`, charged to the allowance before they are copied.
    mutating func readBytes(from r: inout ByteReader, limit: Int) throws(CodecError) -> [UInt8] {
        let count = try r.readCount("byte string length", limit: limit)
        try allowance.charge(DecodedCost.bytes(count))
        return Array(try r.readBytes(count))
    }
}

// MARK: - Interned items on the wire

extension EncodingContext {
    @inline(__always)
    mutating func writeSite(_ site: SiteID, to w: inout ByteWriter) {
        if let index = sites.index(of: site) { return w.writeVarint(index) }
        w.writeVarint(sites.count)
        w.writeFixed64(site.rawValue)
        if budget.admit(tableCount: sites.count, byteCount: 8) { sites.add(site) }
    }

    mutating func writeCollection(_ name: String, to w: inout ByteWriter) {
        if let index = collections.index(of: name) { return w.writeVarint(index) }
        w.writeVarint(collections.count)
        w.writeString(name)
        if budget.admit(tableCount: collections.count, byteCount: name.utf8.count) { collections.add(name) }
    }

    @inline(__always)
    mutating func writeFieldName(_ name: String, to w: inout ByteWriter) {
        if let index = fieldNames.index(of: name) { return w.writeVarint(index) }
        w.writeVarint(fieldNames.count)
        w.writeString(name)
        if budget.admit(tableCount: fieldNames.count, byteCount: name.utf8.count) { fieldNames.add(name) }
    }

    /// A stamp as one varint, relative to the previous stamp in this stream:
    ///
    ///     (zigzag(Δ milliseconds) · 16 + min(logical, 15)) · (sites + 1) + site code
    ///
    /// where `sites` is the size of the session's site table and the site code is the site's
    /// index, or `sites` for a new site whose 8-byte id follows. A logical counter of 15 or more
    /// is followed by (logical − 15). With 16 sites or more the site code is a varint of its own
    /// instead (so the product never overflows). Stamps close in time from a few sites take one
    /// or two bytes.
    @inline(__always)
    mutating func writeStamp(_ stamp: Stamp, to w: inout ByteWriter) {
        let siteIndex = sites.index(of: stamp.site)
        let radix = UInt64(sites.count + 1)
        let code = UInt64(siteIndex ?? sites.count)
        let deltaMs = Int64(bitPattern: stamp.time.milliseconds &- lastTime.milliseconds)
        let zigzag = UInt64(bitPattern: (deltaMs << 1) ^ (deltaMs >> 63))
        let logical = UInt64(stamp.time.logical)
        let timeCode = zigzag << 4 | min(logical, 15)
        if radix <= 16 {
            w.writeVarint(timeCode * radix + code)
        } else {
            w.writeVarint(timeCode)
            w.writeVarint(code)
        }
        if logical >= 15 { w.writeVarint(logical - 15) }
        if siteIndex == nil {
            w.writeFixed64(stamp.site.rawValue)
            if budget.admit(tableCount: sites.count, byteCount: 8) { sites.add(stamp.site) }
        }
        lastTime = stamp.time
    }

    /// A clock reading alone (version vectors): zigzag(Δ milliseconds) · 16 + min(logical, 15),
    /// then (logical − 15) when that is 15 or more.
    @inline(__always)
    mutating func writeTime(_ time: Timestamp, to w: inout ByteWriter) {
        let deltaMs = Int64(bitPattern: time.milliseconds &- lastTime.milliseconds)
        let zigzag = UInt64(bitPattern: (deltaMs << 1) ^ (deltaMs >> 63))
        let logical = UInt64(time.logical)
        w.writeVarint(zigzag << 4 | min(logical, 15))
        if logical >= 15 { w.writeVarint(logical - 15) }
        lastTime = time
    }
}

extension DecodingContext {
    @inline(__always)
    mutating func readSite(from r: inout ByteReader) throws(CodecError) -> SiteID {
        let index = try r.readVarint()
        if let site = try sites.resolve(index, what: "site") { return site }
        let raw = try r.readFixed64()
        guard raw != 0 else { throw .invalidValue("site id zero") }
        let site = SiteID(raw)
        if budget.admit(tableCount: sites.count, byteCount: 8) { sites.add(site) }
        return site
    }

    mutating func readCollection(from r: inout ByteReader) throws(CodecError) -> String {
        let index = try r.readVarint()
        if let name = try collections.resolve(index, what: "collection") { return name }
        let name = try readString(from: &r, limit: limits.maximumStringLength)
        if budget.admit(tableCount: collections.count, byteCount: name.utf8.count) { collections.add(name) }
        return name
    }

    @inline(__always)
    mutating func readFieldName(from r: inout ByteReader) throws(CodecError) -> String {
        let index = try r.readVarint()
        if let name = try fieldNames.resolve(index, what: "field name") { return name }
        let name = try readString(from: &r, limit: limits.maximumStringLength)
        if budget.admit(tableCount: fieldNames.count, byteCount: name.utf8.count) { fieldNames.add(name) }
        return name
    }

    @inline(__always)
    mutating func readTime(from r: inout ByteReader) throws(CodecError) -> Timestamp {
        try time(fromCode: try r.readVarint(), &r)
    }

    @inline(__always)
    private mutating func time(fromCode code: UInt64, _ r: inout ByteReader) throws(CodecError) -> Timestamp {
        var logical = code & 15
        if logical == 15 {
            let (sum, overflow) = logical.addingReportingOverflow(try r.readVarint())
            guard !overflow, sum <= UInt64(UInt16.max) else {
                throw .limitExceeded(what: "logical clock", value: sum, limit: UInt64(UInt16.max))
            }
            logical = sum
        }
        let deltaMs = unzigzag(code >> 4)
        let ms = lastTime.milliseconds &+ UInt64(bitPattern: deltaMs)
        guard ms < (1 << 48) else { throw .invalidValue("clock reading beyond 48 bits of milliseconds") }
        let time = Timestamp(milliseconds: ms, logical: UInt16(logical))
        lastTime = time
        return time
    }

    @inline(__always)
    mutating func readStamp(from r: inout ByteReader) throws(CodecError) -> Stamp {
        let radix = UInt64(sites.count + 1)
        let timeCode: UInt64, code: UInt64
        if radix <= 16 {
            let packed = try r.readVarint()
            timeCode = packed / radix
            code = packed % radix
        } else {
            timeCode = try r.readVarint()
            code = try r.readVarint()
            guard code <= UInt64(sites.count) else { throw .badReference(what: "site", index: code) }
        }
        let time = try self.time(fromCode: timeCode, &r)
        if code == UInt64(sites.count) {
            let raw = try r.readFixed64()
            guard raw != 0 else { throw .invalidValue("site id zero") }
            let site = SiteID(raw)
            if budget.admit(tableCount: sites.count, byteCount: 8) { sites.add(site) }
            return Stamp(time: time, site: site)
        }
        return Stamp(time: time, site: sites.items[Int(code)])
    }
}
