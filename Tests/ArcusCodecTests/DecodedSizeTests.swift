import ArcusCRDT
import ArcusTestSupport
import Testing
@testable import ArcusCodec

/// Frames whose few bytes stand for far more (issue 17, finding 5): each is refused by the
/// bound on what it decodes to, with a `CodecError` that names that bound, and what stays within
/// the bounds still decodes. `arcus bench amplification` measures the same attacks' peak memory
/// through a sync session.
@Suite("Decoded size bounds")
struct DecodedSizeTests {
    // MARK: - Hand-made payloads (an attacker's, not the encoder's)

    /// A key in a new collection whose string id is `id`.
    static func firstKey(_ id: [UInt8], collection: String = "orders", to w: inout ByteWriter) {
        w.writeVarint(1)  // head: a new collection, a string id sharing no prefix
        w.writeVarint(0)  // the (empty) collection table's next index: a new name follows
        w.writeString(collection)
        w.writeLengthPrefixed(id)
    }

    /// A delta batch of one empty document per key: the first `id`, then `steps` keys that
    /// each step its trailing number up by one.
    static func steppedBatch(_ id: [UInt8], steps: Int) -> [UInt8] {
        var w = ByteWriter()
        w.writeVarint(0)  // flags
        w.writeVarint(1 + steps)
        firstKey(id, to: &w)
        w.write(contentsOf: [1, 0])  // an empty document with an empty knowledge list
        for _ in 0..<steps { w.write(contentsOf: [2, 1, 0]) }  // "the previous id, one up"
        return w.take()
    }

    /// A `missing` message for subscription 1: the first `id`, then `steps` stepped keys.
    static func steppedMissing(_ id: [UInt8], steps: Int) -> [UInt8] {
        var w = ByteWriter()
        w.writeVarint(1)
        w.writeVarint(1 + steps)
        firstKey(id, to: &w)
        for _ in 0..<steps { w.write(2) }
        return w.take()
    }

    /// `count` documents of 32 one-byte register fields each, after a vocabulary of their names.
    static func documentsOfFields(_ count: Int) -> [UInt8] {
        var w = ByteWriter()
        w.writeVarint(4)  // flags: a vocabulary
        w.writeVarint(32)
        for n in 0..<32 { w.writeString("f" + (n < 10 ? "0" : "") + String(n)) }
        w.writeVarint(count)
        for i in 0..<count {
            if i == 0 { firstKey(Array("d00000000".utf8), to: &w) } else { w.write(2) }
            w.writeVarint(32 << 5 | 1 << 1)  // 32 root fields, one stamp
            // The stamp, at time zero: the first names a new site (code 0 of an empty table,
            // its id follows), the others that site (code 0 of a table of one).
            w.writeVarint(0)
            if i == 0 { w.writeFixed64(0x0102_0304_0506_0708) }
            for n in 0..<32 {
                w.write(0x80 | UInt8(n) << 2)
                w.write(0xA0)
            }
        }
        return w.take()
    }

    static func id(_ length: Int) -> [UInt8] { [UInt8](repeating: UInt8(ascii: "a"), count: length - 4) + Array("0000".utf8) }

    static func decode(_ type: MessageType, _ payload: [UInt8], compressed: Bool = false) throws(CodecError) -> SyncMessage? {
        var decoder = FrameDecoder()
        let frame = compressed ? FrameEncoder.compressedFrame(type: type, payload: payload)
            : FrameEncoder.frame(rawTypeByte: type.rawValue, payload: payload)
        return try decoder.decode(frame)
    }

    /// The `what` of a `limitExceeded` error, or the error's description.
    static func refusal(_ body: () throws -> SyncMessage?) -> String? {
        do {
            _ = try body()
            return nil
        } catch CodecError.limitExceeded(let what, _, _) {
            return what
        } catch {
            return "\(error)"
        }
    }

    // MARK: - Document ids

    @Test("a key's string id longer than 1 KiB is refused by its length, before it is copied")
    func longStringID() {
        #expect(Self.refusal { try Self.decode(.deltaBatch, Self.steppedBatch(Self.id(1025), steps: 0)) } == "document id length")
        #expect(Self.refusal { try Self.decode(.missing, Self.steppedMissing(Self.id(4 << 20), steps: 3)) } == "document id length")
        // A prefix shared with the previous key counts too.
        #expect(throws: Never.self) { try Self.decode(.deltaBatch, Self.steppedBatch(Self.id(1024), steps: 5)) }
    }

    @Test("an id of 1 KiB, and an object id, go through a session and come back")
    func longestIDRoundTrips() throws {
        let keys = [
            DocumentKey("orders", String(repeating: "x", count: 1020) + "0001"),
            DocumentKey("orders", String(repeating: "x", count: 1020) + "0002"),
            DocumentKey(collection: "orders", id: ["site": "north", "n": 7]),
        ]
        var encoder = FrameEncoder(), decoder = FrameDecoder()
        let message = SyncMessage.missing(MissingDocuments(subscriptionID: 1, keys: keys))
        #expect(try decoder.decode(encoder.encode(message)) == message)
    }

    @Test("an object id whose JSON is longer than 1 KiB, nests deeper than 8, or is empty is refused")
    func badObjectIDs() {
        var deep = Value.object(["x": 1])
        for _ in 0..<8 { deep = .object(["x": deep]) }
        for id: Value in [.object(["k": .string(String(repeating: "y", count: 1100))]), deep, .object([:]), .int(3)] {
            var w = ByteWriter()
            w.writeVarint(1)
            w.writeVarint(1)
            w.writeVarint(1 | 2 << 1)  // a new collection, an id given as a value
            w.writeVarint(0)
            w.writeString("orders")
            var context = EncodingContext()
            context.writeValue(id, to: &w)
            #expect(throws: CodecError.self, "\(id.jsonString.prefix(40))") { try Self.decode(.missing, w.bytes) }
        }
    }

    // MARK: - Counts

    @Test("a missing message of more than 10,000 keys is refused before any key is read")
    func missingFlood() {
        #expect(Self.refusal { try Self.decode(.missing, Self.steppedMissing(Self.id(16), steps: 10_000)) } == "missing documents")
        #expect(throws: Never.self) { try Self.decode(.missing, Self.steppedMissing(Self.id(16), steps: 9_999)) }
    }

    @Test("a batch of more than 65,536 documents is refused before any is read")
    func tooManyDocuments() {
        #expect(Self.refusal { try Self.decode(.deltaBatch, Self.steppedBatch(Self.id(12), steps: 65_536)) } == "documents in a batch")
    }

    // MARK: - Compression

    @Test("a compressed payload may expand at most 256 times, and to at most 8 MiB")
    func expansionBounds() throws {
        let chunk = { (size: Int) -> [UInt8] in
            var w = ByteWriter()
            w.writeLengthPrefixed([UInt8](repeating: 7, count: 32))
            w.writeVarint(0)
            w.writeVarint(size)
            w.writeLengthPrefixed([UInt8](repeating: 0, count: size))
            return w.take()
        }
        // A megabyte of zeros packs into a few hundred bytes: far past the ratio.
        let bomb = Self.refusal { try Self.decode(.attachmentChunk, chunk(1 << 20), compressed: true) }
        #expect(bomb?.hasPrefix("expanded payload length (256 times") == true, "\(bomb ?? "decoded")")
        // Past 8 MiB, whatever the ratio: 9 MiB whose first megabyte is random (and does not
        // compress) packs into a frame of about 1 MiB, nine times smaller.
        var random = SeededRandom(seed: 3)
        var big = chunk(9 << 20)
        for i in 64..<(1 << 20) { big[i] = UInt8.random(in: 0...255, using: &random) }
        #expect(Self.refusal { try Self.decode(.attachmentChunk, big, compressed: true) } == "expanded payload length")
    }

    @Test("a payload that would expand past the ratio goes uncompressed, and decodes")
    func encoderKeepsTheRatio() throws {
        let message = SyncMessage.attachmentChunk(AttachmentChunk(hash: [1], offset: 0, totalLength: 200_000, bytes: [UInt8](repeating: 9, count: 200_000)))
        var encoder = FrameEncoder(), decoder = FrameDecoder()
        let frame = encoder.encode(message)
        #expect(frame[0] & FrameHeader.compressedFlag == 0)
        #expect(try decoder.decode(frame) == message)
    }

    @Test("a payload whose Zstandard header names another size is refused before it is expanded")
    func zstdHeaderDisagrees() throws {
        var payload = ByteWriter()
        payload.writeVarint(300)
        let packed = Compression.compress([UInt8](repeating: 1, count: 5000))!
        payload.write(contentsOf: packed)
        payload.write(contentsOf: [UInt8](repeating: 0, count: 10))  // keeps the ratio
        var decoder = FrameDecoder()
        let frame = FrameEncoder.frame(rawTypeByte: MessageType.attachmentChunk.rawValue | FrameHeader.compressedFlag, payload: payload.bytes)
        #expect(throws: CodecError.invalidValue("a compressed payload whose Zstandard header says it expands to 5000 bytes, not its declared 300")) {
            try decoder.decode(frame)
        }
    }

    // MARK: - The decode allowance

    @Test("a 1 MiB frame of one-byte fields (two cells and a value each) is refused at 16 MiB decoded")
    func cellAmplification() {
        let payload = Self.documentsOfFields(15_300)
        #expect(payload.count > 1_000_000 && payload.count <= 1 << 20)
        let refusal = Self.refusal { try Self.decode(.deltaBatch, payload) }
        #expect(refusal?.hasPrefix("memory one frame decodes to") == true, "\(refusal ?? "decoded")")
    }

    @Test("a 1 MiB array of nulls (16 bytes each once decoded) is refused before it is reserved")
    func valueAmplification() {
        var w = ByteWriter()
        w.writeVarint(1)
        w.writeString("SELECT * FROM orders")
        w.write(0x08)
        w.writeVarint(1_040_000)
        w.write(contentsOf: repeatElement(0, count: 1_040_000))
        let refusal = Self.refusal { try Self.decode(.subscribe, w.bytes) }
        #expect(refusal?.hasPrefix("memory one frame decodes to") == true, "\(refusal ?? "decoded")")
    }
}
