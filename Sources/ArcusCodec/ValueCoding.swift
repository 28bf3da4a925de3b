import ArcusCRDT

/// The value encoding: one tag byte, then the tag's data.
///
/// | tag | meaning |
/// |---|---|
/// | 0x00 / 0x01 / 0x02 | null / false / true |
/// | 0x03 | int, zigzag varint |
/// | 0x04 | double, 8 bytes little-endian |
/// | 0x05 | string: varint length, UTF-8 |
/// | 0x06 | string interned earlier: varint index |
/// | 0x07 | binary: varint length, bytes |
/// | 0x08 | array: varint count, values |
/// | 0x09 | object: varint count, (field name, value) pairs; names interned like map fields |
/// | 0x0A | a `YYYY-MM-DDTHH:MM:SSZ` string: varint seconds since 1970 |
/// | 0x0B | a `YYYY-MM-DDTHH:MM:SS.sssZ` string: varint milliseconds since 1970 |
/// | 0x10–0x1F | a double that is exactly `m / 10^s`, s = tag − 0x10: zigzag varint m |
/// | 0x20–0x3F | string of length tag − 0x20 (0–31 bytes), UTF-8 |
/// | 0x40–0x7F | string interned earlier, index tag − 0x40 (0–63) |
/// | 0x80–0xBF | int tag − 0xA0 (−32…31) |
/// | 0xC0–0xFF | int: zigzag's low six bits in the tag, a varint of the rest follows |
///
/// A string of 2 to 64 bytes sent in full is interned on both sides; later copies in the same
/// stream take two bytes.
enum ValueTag {
    static let null: UInt8 = 0x00, `false`: UInt8 = 0x01, `true`: UInt8 = 0x02
    static let int: UInt8 = 0x03, double: UInt8 = 0x04
    static let string: UInt8 = 0x05, stringReference: UInt8 = 0x06
    static let binary: UInt8 = 0x07, array: UInt8 = 0x08, object: UInt8 = 0x09
    static let dateTimeSeconds: UInt8 = 0x0A, dateTimeMilliseconds: UInt8 = 0x0B
    static let decimalBase: UInt8 = 0x10
    static let shortStringBase: UInt8 = 0x20
    static let shortReferenceBase: UInt8 = 0x40
    static let smallIntBase: UInt8 = 0x80
    static let smallIntBias: Int64 = 32
    static let wideIntBase: UInt8 = 0xC0

    static func internable(_ byteCount: Int) -> Bool { byteCount >= 2 && byteCount <= 64 }
}

/// Exact powers of ten as doubles (all exactly representable up to 10^22).
private let powersOfTen: [Double] = (0...15).map { s in (0..<s).reduce(1.0) { acc, _ in acc * 10 } }

extension EncodingContext {
    mutating func writeValue(_ value: Value, to w: inout ByteWriter) {
        switch value {
        case .null: w.write(ValueTag.null)
        case .bool(let b): w.write(b ? ValueTag.true : ValueTag.false)
        case .int(let i): writeInt(i, to: &w)
        case .double(let d): writeDouble(d, to: &w)
        case .string(let s): writeStringValue(s, to: &w)
        case .binary(let bytes):
            w.write(ValueTag.binary)
            w.writeLengthPrefixed(bytes)
        case .array(let items):
            w.write(ValueTag.array)
            w.writeVarint(items.count)
            for item in items { writeValue(item, to: &w) }
        case .object(let fields):
            w.write(ValueTag.object)
            w.writeVarint(fields.count)
            for key in fields.keys.sorted() {
                writeFieldName(key, to: &w)
                writeValue(fields[key]!, to: &w)
            }
        }
    }

    @inline(__always)
    mutating func writeInt(_ i: Int64, to w: inout ByteWriter) {
        if i >= -ValueTag.smallIntBias && i < ValueTag.smallIntBias {
            w.write(ValueTag.smallIntBase + UInt8(i + ValueTag.smallIntBias))
        } else {
            let zigzag = UInt64(bitPattern: (i << 1) ^ (i >> 63))
            w.write(ValueTag.wideIntBase | UInt8(zigzag & 63))
            w.writeVarint(zigzag >> 6)
        }
    }

    mutating func writeDouble(_ d: Double, to w: inout ByteWriter) {
        // Most measured values are short decimals: send the digits, not the 8 bytes.
        if d.isFinite, d.magnitude < 9.0e15, !(d == 0 && d.sign == .minus) {
            for s in 0..<9 {
                let m = (d * powersOfTen[s]).rounded()
                guard m.magnitude < 9.0e15 else { break }
                if m / powersOfTen[s] == d {
                    w.write(ValueTag.decimalBase + UInt8(s))
                    w.writeSigned(Int64(m))
                    return
                }
            }
        }
        w.write(ValueTag.double)
        w.writeFixed64(d.bitPattern)
    }

    mutating func writeStringValue(_ s: String, to w: inout ByteWriter) {
        if let seconds = DateTimeString.seconds(s) {
            w.write(ValueTag.dateTimeSeconds)
            w.writeVarint(seconds)
            return
        }
        if let millis = DateTimeString.milliseconds(s) {
            w.write(ValueTag.dateTimeMilliseconds)
            w.writeVarint(millis)
            return
        }
        let length = s.utf8.count
        if ValueTag.internable(length) {
            let hash = s.internHash
            if let index = strings.index(of: s, hash: hash) {
                if index < 64 {
                    w.write(ValueTag.shortReferenceBase + UInt8(index))
                } else {
                    w.write(ValueTag.stringReference)
                    w.writeVarint(index)
                }
                return
            }
            if budget.admit(tableCount: strings.count, byteCount: length) { strings.add(s, hash: hash) }
        }
        if length < 32 {
            w.write(ValueTag.shortStringBase + UInt8(length))
            w.write(contentsOf: s.utf8)
        } else {
            w.write(ValueTag.string)
            w.writeString(s)
        }
    }
}

extension DecodingContext {
    mutating func readValue(from r: inout ByteReader, depth: Int = 0) throws(CodecError) -> Value {
        let offset = r.offset
        let tag = try r.readByte()
        if tag >= ValueTag.wideIntBase {
            let high = try r.readVarint()
            guard high >> 58 == 0 else { throw .malformedVarint(offset: offset) }
            return .int(unzigzag(high << 6 | UInt64(tag & 63)))
        }
        if tag >= ValueTag.smallIntBase { return .int(Int64(tag - ValueTag.smallIntBase) - ValueTag.smallIntBias) }
        if tag >= ValueTag.shortReferenceBase {
            let index = UInt64(tag - ValueTag.shortReferenceBase)
            guard let s = try strings.resolve(index, what: "string") else { throw .badReference(what: "string", index: index) }
            return .string(s)
        }
        if tag >= ValueTag.shortStringBase && tag < ValueTag.shortStringBase + 32 {
            return .string(try readStringLiteral(byteCount: Int(tag - ValueTag.shortStringBase), from: &r))
        }
        if tag >= ValueTag.decimalBase && tag < ValueTag.decimalBase + 16 {
            let m = try r.readSigned()
            guard m.magnitude < 9_000_000_000_000_000 else { throw .invalidValue("decimal mantissa out of range") }
            return .double(Double(m) / powersOfTen[Int(tag - ValueTag.decimalBase)])
        }
        switch tag {
        case ValueTag.null: return .null
        case ValueTag.false: return .bool(false)
        case ValueTag.true: return .bool(true)
        case ValueTag.int: return .int(try r.readSigned())
        case ValueTag.double:
            let d = Double(bitPattern: try r.readFixed64())
            guard d.isFinite else { throw .invalidValue("a double that is not finite") }
            return .double(d)
        case ValueTag.string:
            let count = try r.readCount("string length", limit: limits.maximumStringLength)
            return .string(try readStringLiteral(byteCount: count, from: &r))
        case ValueTag.stringReference:
            let index = try r.readVarint()
            guard let s = try strings.resolve(index, what: "string") else { throw .badReference(what: "string", index: index) }
            return .string(s)
        case ValueTag.binary:
            return .binary(try readBytes(from: &r, limit: limits.maximumStringLength))
        case ValueTag.array:
            guard depth < limits.maximumDepth else { throw .tooDeep(limit: limits.maximumDepth) }
            let count = try r.readCount("array length", limit: Int.max)
            try allowance.charge(count, each: DecodedCost.value)
            try allowance.charge(DecodedCost.heapObject)
            var items: [Value] = []
            items.reserveCapacity(count)
            for _ in 0..<count { items.append(try readValue(from: &r, depth: depth + 1)) }
            return .array(items)
        case ValueTag.object:
            guard depth < limits.maximumDepth else { throw .tooDeep(limit: limits.maximumDepth) }
            let count = try r.readCount("object size", limit: Int.max, minimumItemSize: 2)
            try allowance.charge(count, each: DecodedCost.objectEntry)
            try allowance.charge(DecodedCost.heapObject)
            var fields: [String: Value] = [:]
            fields.reserveCapacity(count)
            for _ in 0..<count {
                let key = try readFieldName(from: &r)
                let value = try readValue(from: &r, depth: depth + 1)
                guard fields.updateValue(value, forKey: key) == nil else { throw .invalidValue("duplicate object key \"\(key)\"") }
            }
            return .object(fields)
        case ValueTag.dateTimeSeconds:
            let seconds = try r.readVarint()
            try allowance.charge(DecodedCost.string(DateTimeString.secondsLength))
            guard let s = DateTimeString.format(seconds: seconds) else { throw .invalidValue("date-time out of range") }
            return .string(s)
        case ValueTag.dateTimeMilliseconds:
            let millis = try r.readVarint()
            try allowance.charge(DecodedCost.string(DateTimeString.millisecondsLength))
            guard let s = DateTimeString.format(milliseconds: millis) else { throw .invalidValue("date-time out of range") }
            return .string(s)
        default:
            throw .unknownTag(what: "value", tag: tag, offset: offset)
        }
    }

    private mutating func readStringLiteral(byteCount: Int, from r: inout ByteReader) throws(CodecError) -> String {
        try allowance.charge(DecodedCost.string(byteCount))
        let s = try r.readString(byteCount: byteCount)
        if ValueTag.internable(byteCount), budget.admit(tableCount: strings.count, byteCount: byteCount) {
            strings.add(s)
        }
        return s
    }
}
