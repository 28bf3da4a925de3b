/// The unsigned LEB128 varint that announces a message's length in its first fragment.
enum LengthPrefix {
    /// The bytes `length` takes.
    static func size(of length: Int) -> Int {
        precondition(length >= 0, "a length is never negative")
        var size = 1, rest = UInt64(length) >> 7
        while rest != 0 { size += 1; rest >>= 7 }
        return size
    }

    static func append(_ length: Int, to bytes: inout [UInt8]) {
        precondition(length >= 0, "a length is never negative")
        var rest = UInt64(length)
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// Reads a length that starts at `start`; nil if it runs off the end of `bytes` or does not
    /// fit in an `Int`.
    static func read(from bytes: [UInt8], at start: Int) -> (length: Int, end: Int)? {
        var value: UInt64 = 0, shift: UInt64 = 0, index = start
        while index < bytes.endIndex {
            let byte = bytes[index]
            index += 1
            let bits = UInt64(byte & 0x7F)
            // The tenth byte may hold one bit; anything more would not fit in 64 bits.
            guard shift < 63 || bits <= 1 else { return nil }
            value |= bits << shift
            if byte & 0x80 == 0 {
                guard let length = Int(exactly: value) else { return nil }
                return (length, index)
            }
            shift += 7
            guard shift <= 63 else { return nil }
        }
        return nil
    }
}
