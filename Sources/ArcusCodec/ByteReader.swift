/// Reads the wire primitives from untrusted bytes. Every read checks the bytes left first and
/// throws `CodecError` instead of trapping.
public struct ByteReader {
    public let bytes: [UInt8]
    public private(set) var offset: Int
    public let end: Int

    public init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        offset = start
        self.end = end ?? bytes.count
    }

    public var remaining: Int { end - offset }
    public var isAtEnd: Bool { offset >= end }

    @inline(__always)
    public mutating func readByte() throws(CodecError) -> UInt8 {
        guard offset < end else { throw .truncated(offset: offset, needed: 1) }
        defer { offset += 1 }
        return bytes[offset]
    }

    @inline(__always)
    public func peekByte() throws(CodecError) -> UInt8 {
        guard offset < end else { throw .truncated(offset: offset, needed: 1) }
        return bytes[offset]
    }

    @inline(__always)
    public mutating func readVarint() throws(CodecError) -> UInt64 {
        let start = offset
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < end else { throw .truncated(offset: offset, needed: 1) }
            let byte = bytes[offset]
            offset += 1
            if shift == 63 && byte > 1 { throw .malformedVarint(offset: start) }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
            if shift > 63 { throw .malformedVarint(offset: start) }
        }
    }

    @inline(__always)
    public mutating func readSigned() throws(CodecError) -> Int64 { unzigzag(try readVarint()) }

    /// A count of items that each take at least `minimumItemSize` bytes, bounded by `limit`
    /// and by the bytes left, so nothing is allocated for a count the input cannot back.
    public mutating func readCount(_ what: String, limit: Int, minimumItemSize: Int = 1) throws(CodecError) -> Int {
        let value = try readVarint()
        let byBytes = UInt64(remaining / max(minimumItemSize, 1))
        let bound = min(UInt64(limit), byBytes)
        guard value <= bound else {
            throw .limitExceeded(what: what, value: value, limit: value > UInt64(limit) ? UInt64(limit) : byBytes)
        }
        return Int(value)
    }

    public mutating func readFixed32() throws(CodecError) -> UInt32 {
        guard remaining >= 4 else { throw .truncated(offset: offset, needed: 4 - remaining) }
        var v: UInt32 = 0
        for i in 0..<4 { v |= UInt32(bytes[offset + i]) << (8 * UInt32(i)) }
        offset += 4
        return v
    }

    public mutating func readFixed64() throws(CodecError) -> UInt64 {
        guard remaining >= 8 else { throw .truncated(offset: offset, needed: 8 - remaining) }
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(bytes[offset + i]) << (8 * UInt64(i)) }
        offset += 8
        return v
    }

    public mutating func readBytes(_ count: Int) throws(CodecError) -> ArraySlice<UInt8> {
        guard count >= 0, remaining >= count else { throw .truncated(offset: offset, needed: count - remaining) }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    /// A UTF-8 string of exactly `count` bytes; invalid UTF-8 is an error, not a repair.
    public mutating func readString(byteCount count: Int) throws(CodecError) -> String {
        let start = offset
        let slice = try readBytes(count)
        guard let string = slice.withUnsafeBufferPointer({ UTF8Text.string($0) }) else {
            throw .invalidUTF8(offset: start)
        }
        return string
    }

    public mutating func readString(limit: Int) throws(CodecError) -> String {
        let count = try readCount("string length", limit: limit)
        return try readString(byteCount: count)
    }

    public mutating func readLengthPrefixed(limit: Int) throws(CodecError) -> [UInt8] {
        let count = try readCount("byte string length", limit: limit)
        return Array(try readBytes(count))
    }

    public func expectEnd() throws(CodecError) {
        if offset != end { throw .trailingBytes(count: end - offset) }
    }
}
