import ArcusCodec

/// Frames a member of the mesh (or anyone holding its shared secret) could send to make a peer
/// allocate far more than the frame's size: the amplification attacks of issue 17, finding 5.
/// Built byte by byte, as an attacker would, not with `FrameEncoder` (which never makes them).
///
/// Each expects to follow the attacker's hello and `subscribe(1, "SELECT * FROM orders")`, with
/// nothing else interned in that direction of the session: the first collection it names is new.
public enum HostileFrame: String, CaseIterable, Sendable {
    /// A delta batch, compressed: a 4 MiB string id ending in digits, then a million one-byte
    /// keys that each step its number up; every key is a copy of the whole id (4 TiB in all).
    case stepKeys = "step-keys"
    /// The same in a `missing` message, whose keys need no document after them.
    case missingStepKeys = "missing-step-keys"
    /// A `missing` message, compressed, naming 2^20 documents by short keys.
    case missingFlood = "missing-flood"
    /// A compressed attachment chunk that expands to 16 MiB of zeros (the old frame limit).
    case zstdBomb = "zstd-bomb"
    /// A compressed subscribe whose arguments are an array of 16 million nulls.
    case valueBomb = "value-bomb"
    /// A compressed delta batch of a million empty documents.
    case manyDocuments = "many-documents"
    /// An uncompressed 1 MiB delta batch (the largest sync frame a peer's session carries) of
    /// 350,000 empty documents: no compression ratio to catch.
    case manyDocumentsPlain = "many-documents-plain"
    /// An uncompressed 1 MiB delta batch of documents of 32 one-byte fields each: two cells and
    /// a value per two bytes on the wire.
    case manyCellsPlain = "many-cells-plain"

    /// The frame's bytes.
    public var bytes: [UInt8] {
        switch self {
        case .stepKeys: return FrameEncoder.compressedFrame(type: .deltaBatch, payload: Self.steppedBatch(idLength: 4 << 20, documents: 1 << 20))
        case .missingStepKeys: return FrameEncoder.compressedFrame(type: .missing, payload: Self.steppedMissing(idLength: 4 << 20, keys: 1 << 20))
        case .missingFlood: return FrameEncoder.compressedFrame(type: .missing, payload: Self.steppedMissing(idLength: 16, keys: 1 << 20))
        case .zstdBomb: return FrameEncoder.compressedFrame(type: .attachmentChunk, payload: Self.chunk(bytes: (16 << 20) - 64))
        case .valueBomb: return FrameEncoder.compressedFrame(type: .subscribe, payload: Self.subscribeWithNulls((16 << 20) - 64))
        case .manyDocuments: return FrameEncoder.compressedFrame(type: .deltaBatch, payload: Self.emptyDocuments(1 << 20))
        case .manyDocumentsPlain: return FrameEncoder.frame(rawTypeByte: MessageType.deltaBatch.rawValue, payload: Self.emptyDocuments(349_000))
        case .manyCellsPlain: return FrameEncoder.frame(rawTypeByte: MessageType.deltaBatch.rawValue, payload: Self.documentsOfFields(15_300))
        }
    }

    // MARK: - Payloads

    /// The key of the first document: a new collection, "orders", and a string id of
    /// `idLength` bytes whose last eight are digits.
    private static func firstKey(idLength: Int, to w: inout ByteWriter) {
        w.writeVarint(1)  // head: a new collection, a string id sharing nothing with the last
        w.writeVarint(0)  // the collection table is empty: a new name follows
        w.writeString("orders")
        let digits = min(8, idLength)
        w.writeVarint(idLength)
        w.write(contentsOf: repeatElement(UInt8(ascii: "a"), count: idLength - digits))
        w.write(contentsOf: repeatElement(UInt8(ascii: "0"), count: digits))
    }

    /// The key head for "the previous id, its number one up, same collection".
    private static let stepKeyHead: UInt8 = 1 << 1

    /// A document with nothing in it and an empty knowledge list: two bytes, so that with a
    /// one-byte key it meets the batch's three bytes a document.
    private static let emptyDocument: [UInt8] = [1, 0]

    static func steppedBatch(idLength: Int, documents: Int) -> [UInt8] {
        var w = ByteWriter(capacity: idLength + 3 * documents + 64)
        w.writeVarint(0)  // flags
        w.writeVarint(documents)
        firstKey(idLength: idLength, to: &w)
        w.write(contentsOf: emptyDocument)
        for _ in 1..<documents {
            w.write(stepKeyHead)
            w.write(contentsOf: emptyDocument)
        }
        return w.take()
    }

    static func steppedMissing(idLength: Int, keys: Int) -> [UInt8] {
        var w = ByteWriter(capacity: idLength + keys + 64)
        w.writeVarint(1)  // subscription id
        w.writeVarint(keys)
        firstKey(idLength: idLength, to: &w)
        for _ in 1..<keys { w.write(stepKeyHead) }
        return w.take()
    }

    static func emptyDocuments(_ count: Int) -> [UInt8] { steppedBatch(idLength: 9, documents: count) }

    static func chunk(bytes: Int) -> [UInt8] {
        var w = ByteWriter(capacity: bytes + 64)
        w.writeLengthPrefixed([UInt8](repeating: 7, count: 32))
        w.writeVarint(0)  // offset
        w.writeVarint(bytes)  // total length
        w.writeLengthPrefixed([UInt8](repeating: 0, count: bytes))
        return w.take()
    }

    static func subscribeWithNulls(_ count: Int) -> [UInt8] {
        var w = ByteWriter(capacity: count + 64)
        w.writeVarint(2)  // subscription id
        w.writeString("SELECT * FROM orders")
        w.write(0x08)  // an array
        w.writeVarint(count)
        w.write(contentsOf: repeatElement(0, count: count))  // nulls
        return w.take()
    }

    /// `count` documents of 32 fields each, every field a register holding 0 in the one-byte
    /// form, after a vocabulary of the 32 names.
    static func documentsOfFields(_ count: Int) -> [UInt8] {
        let names = (0..<32).map { "f" + ($0 < 10 ? "0" : "") + String($0) }
        var w = ByteWriter(capacity: count * 68 + 256)
        w.writeVarint(4)  // flags: a vocabulary
        w.writeVarint(names.count)
        for name in names { w.writeString(name) }
        w.writeVarint(count)
        for i in 0..<count {
            if i == 0 { firstKey(idLength: 9, to: &w) } else { w.write(stepKeyHead) }
            w.writeVarint(UInt64(names.count) << 5 | 1 << 1)  // head: 32 root fields, one stamp
            w.write(0)  // the stamp: the speaker's site (interned from its hello), time unchanged
            for n in 0..<names.count {
                w.write(0x80 | UInt8(n) << 2)  // a register of field n, written at stamp 0
                w.write(0xA0)  // the small int 0
            }
        }
        return w.take()
    }
}
