/// Why bytes could not be decoded. Every decoder in ArcusCodec throws only this, never traps,
/// and bounds every length and count before allocating.
public enum CodecError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The input ended inside an item; `needed` bytes were wanted at `offset`.
    case truncated(offset: Int, needed: Int)
    /// A varint ran past 10 bytes or past 64 bits.
    case malformedVarint(offset: Int)
    /// A length or count is larger than the bytes left or than the documented maximum.
    case limitExceeded(what: String, value: UInt64, limit: UInt64)
    /// Arrays, objects or maps nest deeper than `CodecLimits.maximumDepth`.
    case tooDeep(limit: Int)
    /// A tag byte that means nothing in this position.
    case unknownTag(what: String, tag: UInt8, offset: Int)
    /// A reference to an interned item that was never defined.
    case badReference(what: String, index: UInt64)
    case invalidUTF8(offset: Int)
    case invalidValue(String)
    case checksumMismatch(expected: UInt32, actual: UInt32)
    case unsupportedVersion(UInt8)
    /// Bytes were left after an item that should have filled its frame.
    case trailingBytes(count: Int)

    public var description: String {
        switch self {
        case .truncated(let offset, let needed): return "input ends early: \(needed) more byte(s) needed at offset \(offset)"
        case .malformedVarint(let offset): return "malformed varint at offset \(offset)"
        case .limitExceeded(let what, let value, let limit): return "\(what) of \(value) exceeds the limit of \(limit)"
        case .tooDeep(let limit): return "values nest deeper than \(limit) levels"
        case .unknownTag(let what, let tag, let offset): return "unknown \(what) tag 0x\(String(tag, radix: 16)) at offset \(offset)"
        case .badReference(let what, let index): return "reference to undefined \(what) #\(index)"
        case .invalidUTF8(let offset): return "invalid UTF-8 in a string at offset \(offset)"
        case .invalidValue(let why): return "invalid value: \(why)"
        case .checksumMismatch(let expected, let actual):
            return "frame checksum mismatch (CRC32C expected \(String(expected, radix: 16)), computed \(String(actual, radix: 16)))"
        case .unsupportedVersion(let v): return "unsupported frame version \(v) (this build speaks version \(FrameHeader.currentVersion))"
        case .trailingBytes(let count): return "\(count) unexpected byte(s) after the message"
        }
    }
}
