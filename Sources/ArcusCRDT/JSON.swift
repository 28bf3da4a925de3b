import Foundation

/// Why a JSON text could not be read, with the byte offset where reading stopped.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var offset: Int

    public var description: String { "invalid JSON at byte \(offset): \(message)" }
}

extension Value {
    /// Parses JSON text. Integers without a fraction or exponent that fit in 64 bits stay exact
    /// (`.int`); other numbers become `.double`. An object whose only key is `"$binary"` with a
    /// base64 string is read back as `.binary`. Nesting deeper than `maximumNestingDepth` is an
    /// error, as are duplicate keys, NaN and numbers that overflow a `Double`.
    public init(json text: String) throws {
        var text = text
        self = try text.withUTF8 { bytes in
            var reader = JSONReader(bytes: bytes)
            return try reader.readDocument()
        }
    }

    public init(jsonBytes bytes: some Collection<UInt8>) throws {
        let array = Array(bytes)
        self = try array.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(bytes: buffer)
            return try reader.readDocument()
        }
    }

    /// The value as compact JSON with object keys sorted, so equal values give equal text.
    public var jsonString: String {
        var writer = JSONWriter(capacity: 128)
        writer.write(self)
        return writer.text
    }
}

/// Compact JSON into UTF-8 bytes, object keys in sorted order.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func write(_ value: Value) {
        switch value {
        case .null: append("null")
        case .bool(let b): append(b ? "true" : "false")
        case .int(let i): write(i)
        case .double(let d): write(d)
        case .string(let s): write(s)
        case .binary(let data):
            append("{\"$binary\":\"")
            append(Data(data).base64EncodedString())
            append("\"}")
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                write(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let fields):
            bytes.append(UInt8(ascii: "{"))
            for (i, field) in fields.sorted(by: { $0.key < $1.key }).enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                write(field.key)
                bytes.append(UInt8(ascii: ":"))
                write(field.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    mutating func write(_ i: Int64) {
        if i < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = i.magnitude
        if magnitude < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude))
            return
        }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                buffer[23 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            }
            bytes.append(contentsOf: buffer[(24 - count)...])
        }
    }

    mutating func write(_ d: Double) { append(d.description) }

    mutating func write(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { utf8 in
            var clean = 0  // start of the run of bytes that need no escape
            for (i, byte) in utf8.enumerated() where byte < 0x20 || byte == 0x22 || byte == 0x5C {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[clean..<i]))
                clean = i + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case 0x22: bytes.append(0x22)
                case 0x5C: bytes.append(0x5C)
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[clean...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func append(_ s: String) {
        var s = s
        s.withUTF8 { bytes.append(contentsOf: $0) }
    }

    mutating func append(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func append(byte: UInt8) { bytes.append(byte) }
}

/// A strict RFC 8259 reader over UTF-8 bytes.
struct JSONReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func readDocument() throws -> Value {
        let value = try readValue()
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected text after the value") }
        return value
    }

    private func fail(_ message: String) -> JSONError { JSONError(message: message, offset: index) }

    private mutating func skipWhitespace() {
        while index < bytes.count, Self.isWhitespace(bytes[index]) { index += 1 }
    }

    /// JSON's whitespace: space, tab, line feed, carriage return.
    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    mutating func readValue() throws -> Value {
        skipWhitespace()
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try readObject()
        case UInt8(ascii: "["): return try readArray()
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectWord("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try readNumber()
        default: throw fail("unexpected character")
        }
    }

    private mutating func expectWord(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw fail("unexpected end of input") }
        for i in 0..<count where bytes[index + i] != word.utf8Start[i] {
            throw fail("unexpected character")
        }
        index += count
    }

    private mutating func enter() throws {
        depth += 1
        if depth > Value.maximumNestingDepth {
            throw fail("nesting deeper than \(Value.maximumNestingDepth) levels")
        }
    }

    private mutating func readObject() throws -> Value {
        var fields: [String: Value] = [:]
        _ = try readMembers { key, keyOffset, reader in
            if fields.updateValue(try reader.readValue(), forKey: key) != nil {
                throw JSONError(message: "duplicate field name \"\(key)\"", offset: keyOffset)
            }
            return true
        }
        if fields.count == 1, case .string(let base64)? = fields["$binary"] {
            guard let data = Data(base64Encoded: base64) else { throw fail("\"$binary\" is not base64") }
            return .binary(Array(data))
        }
        return .object(fields)
    }

    /// Whether the next value is an object, which `readMembers` reads.
    mutating func nextIsObject() -> Bool {
        skipWhitespace()
        return index < bytes.count && bytes[index] == UInt8(ascii: "{")
    }

    /// Whether the next value is an object whose first name is `name` as written, byte for
    /// byte (an escaped spelling does not count). Reads nothing.
    mutating func nextObjectStarts(with name: StaticString) -> Bool {
        guard nextIsObject() else { return false }
        var at = index + 1
        while at < bytes.count, Self.isWhitespace(bytes[at]) { at += 1 }
        let count = name.utf8CodeUnitCount
        guard bytes.count - at >= count + 2, bytes[at] == UInt8(ascii: "\""), bytes[at + count + 1] == UInt8(ascii: "\"") else { return false }
        return (0..<count).allSatisfy { bytes[at + 1 + $0] == name.utf8Start[$0] }
    }

    /// Whether only whitespace is left.
    mutating func isAtEnd() -> Bool {
        skipWhitespace()
        return index == bytes.count
    }

    /// Reads the object at the reader (`nextIsObject`) member by member, in the order of the
    /// text, without building it: `member` gets each name and the offset where it starts, and
    /// reads the member's value (`readValue`, or `readMembers` for an object). Duplicate names
    /// are for `member` to notice. `member` returns false to stop reading; so does this.
    mutating func readMembers(_ member: (String, Int, inout JSONReader) throws -> Bool) throws -> Bool {
        try enter()
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return true
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a field name") }
            let keyOffset = index
            let key = try readString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            guard try member(key, keyOffset, &self) else { return false }
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; break }
            throw fail("expected ',' or '}'")
        }
        depth -= 1
        return true
    }

    private mutating func readArray() throws -> Value {
        try enter()
        index += 1
        var items: [Value] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(items)
        }
        while true {
            items.append(try readValue())
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; break }
            throw fail("expected ',' or ']'")
        }
        depth -= 1
        return .array(items)
    }

    private mutating func readString() throws -> String {
        index += 1
        let start = index
        // Fast path: no escapes.
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return s
            }
            if b == UInt8(ascii: "\\") || b < 0x20 { break }
            index += 1
        }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self).unicodeScalars)
        var pendingUTF8: [UInt8] = []
        func flush(_ pending: inout [UInt8], into scalars: inout String.UnicodeScalarView) {
            if !pending.isEmpty {
                scalars.append(contentsOf: String(decoding: pending, as: UTF8.self).unicodeScalars)
                pending.removeAll(keepingCapacity: true)
            }
        }
        while true {
            guard index < bytes.count else { throw fail("unterminated string") }
            let b = bytes[index]
            if b == UInt8(ascii: "\"") { index += 1; break }
            if b < 0x20 { throw fail("control character in string") }
            if b != UInt8(ascii: "\\") {
                pendingUTF8.append(b)
                index += 1
                continue
            }
            flush(&pendingUTF8, into: &scalars)
            index += 1
            guard index < bytes.count else { throw fail("unterminated escape") }
            let e = bytes[index]
            index += 1
            switch e {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var code = try readHex4()
                if (0xD800...0xDBFF).contains(code) {
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                    else { throw fail("unpaired surrogate") }
                    index += 2
                    let low = try readHex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(code) {
                    throw fail("unpaired surrogate")
                }
                guard let scalar = Unicode.Scalar(code) else { throw fail("invalid \\u escape") }
                scalars.append(scalar)
            default: throw fail("invalid escape")
            }
        }
        flush(&pendingUTF8, into: &scalars)
        return String(scalars)
    }

    private mutating func readHex4() throws -> UInt32 {
        guard bytes.count - index >= 4 else { throw fail("short \\u escape") }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw fail("invalid hex digit")
            }
            code = code << 4 | digit
            index += 1
        }
        return code
    }

    private mutating func readNumber() throws -> Value {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
            throw fail("expected a digit")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            let digits = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            guard index > digits else { throw fail("expected a digit after '.'") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            let digits = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            guard index > digits else { throw fail("expected a digit in the exponent") }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if isInteger, let i = Int64(text) { return .int(i) }
        guard let d = Double(text), d.isFinite else {
            throw JSONError(message: "number out of range", offset: start)
        }
        return .double(d)
    }
}
