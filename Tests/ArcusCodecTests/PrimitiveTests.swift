import Testing
@testable import ArcusCodec

@Suite("Wire primitives")
struct PrimitiveTests {
    @Test("varints round-trip at every width boundary", arguments: [
        0, 1, 127, 128, 255, 16383, 16384, (1 << 21) - 1, 1 << 21, UInt64(UInt32.max), 1 << 56, UInt64.max,
    ] as [UInt64])
    func varintRoundTrip(value: UInt64) throws {
        var w = ByteWriter()
        w.writeVarint(value)
        #expect(w.count == max(1, (64 - value.leadingZeroBitCount + 6) / 7))
        var r = ByteReader(w.bytes)
        #expect(try r.readVarint() == value)
        #expect(r.isAtEnd)
    }

    @Test("zigzag keeps small magnitudes of either sign small", arguments: [0, -1, 1, -64, 63, -65, Int64.min, Int64.max] as [Int64])
    func zigzag(value: Int64) throws {
        var w = ByteWriter()
        w.writeSigned(value)
        var r = ByteReader(w.bytes)
        #expect(try r.readSigned() == value)
        if (-64...63).contains(value) { #expect(w.count == 1) }
    }

    @Test("an overlong or overflowing varint is an error, not a wrap-around")
    func malformedVarints() {
        var tooLong = ByteReader([UInt8](repeating: 0x80, count: 11) + [0])
        #expect(throws: CodecError.self) { try tooLong.readVarint() }
        var overflow = ByteReader([UInt8](repeating: 0xFF, count: 9) + [0x02])
        #expect(throws: CodecError.malformedVarint(offset: 0)) { try overflow.readVarint() }
        var truncated = ByteReader([0x80, 0x80])
        #expect(throws: CodecError.self) { try truncated.readVarint() }
    }

    @Test("CRC-32C matches the standard check values (RFC 3720)")
    func crc32c() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
        // Incremental updates agree with one pass.
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        #expect(CRC32C.update(CRC32C.checksum(bytes[..<333]), bytes[333...]) == CRC32C.checksum(bytes))
    }

    @Test("counts are bounded by the bytes left before anything is allocated")
    func countsAreBounded() {
        var w = ByteWriter()
        w.writeVarint(1_000_000_000)
        var r = ByteReader(w.bytes + [1, 2, 3])
        #expect(throws: CodecError.self) { try r.readCount("items", limit: .max) }
    }

    @Test("strings must be valid UTF-8")
    func invalidUTF8() {
        var r = ByteReader([0xC3, 0x28])
        #expect(throws: CodecError.invalidUTF8(offset: 0)) { try r.readString(byteCount: 2) }
    }
}
