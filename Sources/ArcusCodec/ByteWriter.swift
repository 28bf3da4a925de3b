/// Appends the wire primitives to a growing byte buffer.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var count: Int { bytes.count }

    /// Empties the buffer, keeping its capacity for the next message.
    public mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    @inline(__always)
    public mutating func write(_ byte: UInt8) { bytes.append(byte) }

    public mutating func write(contentsOf other: some Sequence<UInt8>) { bytes.append(contentsOf: other) }

    /// LEB128: seven bits per byte, low bits first.
    @inline(__always)
    public mutating func writeVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    @inline(__always)
    public mutating func writeVarint(_ value: Int) { writeVarint(UInt64(value)) }

    /// Zigzag then varint: small magnitudes of either sign take one byte.
    @inline(__always)
    public mutating func writeSigned(_ value: Int64) {
        writeVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    public mutating func writeFixed32(_ value: UInt32) {
        var v = value.littleEndian
        withUnsafeBytes(of: &v) { bytes.append(contentsOf: $0) }
    }

    public mutating func writeFixed64(_ value: UInt64) {
        var v = value.littleEndian
        withUnsafeBytes(of: &v) { bytes.append(contentsOf: $0) }
    }

    /// A varint byte length, then the UTF-8 bytes.
    public mutating func writeString(_ string: String) {
        var s = string
        s.withUTF8 { utf8 in
            writeVarint(utf8.count)
            bytes.append(contentsOf: utf8)
        }
    }

    public mutating func writeLengthPrefixed(_ data: some Collection<UInt8>) {
        writeVarint(data.count)
        bytes.append(contentsOf: data)
    }

    /// Gives up the buffer without copying.
    public mutating func take() -> [UInt8] {
        defer { bytes = [] }
        return bytes
    }
}

/// Zigzag decoding, the inverse of `ByteWriter.writeSigned`.
@inline(__always)
func unzigzag(_ value: UInt64) -> Int64 {
    Int64(bitPattern: (value >> 1) ^ (0 &- (value & 1)))
}
