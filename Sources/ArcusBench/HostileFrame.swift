import ArcusAgent
import ArcusCRDT
import ArcusCodec

/// Frames a member of the mesh (or anyone holding its shared secret) could send to make a peer
/// allocate far more than the frame's size: the amplification attacks of issue 17, finding 5.
/// Built byte by byte, as an attacker would, not with `FrameEncoder` (which never makes them).
///
/// Each expects to follow the attacker's hello and `subscribe(1, "SELECT * FROM orders")`, with
/// nothing else interned in that direction of the session (the first collection it names is
/// new), at a victim that subscribed to `SELECT * FROM orders` (its subscription 1).
public enum HostileFrame: String, CaseIterable, Sendable {
    /// A delta batch, compressed: a 4 MiB string id ending in digits, then a million one-byte
    /// keys that each step its number up; every key is a copy of the whole id (4 TiB in all).
    case stepKeys = "step-keys"
    /// The same uncompressed (no expansion ratio to catch it): a 512 KiB id and 60,000 steps
    /// (30 GiB of ids) in 700 KB.
    case stepKeysPlain = "step-keys-plain"
    /// The same in a `missing` message, whose keys need no document after them.
    case missingStepKeys = "missing-step-keys"
    /// That uncompressed, with no more keys than a `missing` message may have: a 512 KiB id and
    /// 10,000 steps (5 GiB of ids) in 530 KB.
    case missingStepKeysPlain = "missing-step-keys-plain"
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
    /// The same documents, 65,000 (about the most a batch may hold), in a compressed batch of
    /// 4.5 MB, with 48 KiB of random bytes in the first document so that it passes the expansion
    /// ratio: what decodes to the most from the least.
    case manyCellsPadded = "many-cells-padded"
    /// A batch just inside the decode allowance (4,000 such documents, 272 KB on the wire) for
    /// the subscription the victim announced: what merging about the largest batch it takes costs.
    case manyCellsMerged = "many-cells-merged"
    /// An uncompressed `missing` message of the most keys (10,000), each a step from a 1 KiB id
    /// (the longest): 10 MiB of ids from 11 KB.
    case missingLongIDs = "missing-long-ids"

    /// The frame's bytes.
    public var bytes: [UInt8] {
        switch self {
        case .stepKeys: return FrameEncoder.compressedFrame(type: .deltaBatch, payload: Self.steppedBatch(idLength: 4 << 20, documents: 1 << 20))
        case .missingStepKeys: return FrameEncoder.compressedFrame(type: .missing, payload: Self.steppedMissing(idLength: 4 << 20, keys: 1 << 20))
        case .stepKeysPlain:
            return FrameEncoder.frame(rawTypeByte: MessageType.deltaBatch.rawValue, payload: Self.steppedBatch(idLength: 512 << 10, documents: 60_000))
        case .missingStepKeysPlain:
            return FrameEncoder.frame(rawTypeByte: MessageType.missing.rawValue, payload: Self.steppedMissing(idLength: 512 << 10, keys: 10_000))
        case .missingFlood: return FrameEncoder.compressedFrame(type: .missing, payload: Self.steppedMissing(idLength: 16, keys: 1 << 20))
        case .zstdBomb: return FrameEncoder.compressedFrame(type: .attachmentChunk, payload: Self.chunk(bytes: (16 << 20) - 64))
        case .valueBomb: return FrameEncoder.compressedFrame(type: .subscribe, payload: Self.subscribeWithNulls((16 << 20) - 64))
        case .manyDocuments: return FrameEncoder.compressedFrame(type: .deltaBatch, payload: Self.emptyDocuments(1 << 20))
        case .manyDocumentsPlain: return FrameEncoder.frame(rawTypeByte: MessageType.deltaBatch.rawValue, payload: Self.emptyDocuments(349_000))
        case .manyCellsPlain: return FrameEncoder.frame(rawTypeByte: MessageType.deltaBatch.rawValue, payload: Self.documentsOfFields(15_300))
        case .manyCellsPadded:
            return FrameEncoder.compressedFrame(type: .deltaBatch, payload: Self.documentsOfFields(65_000, padding: 48 << 10))
        case .manyCellsMerged:
            return FrameEncoder.frame(rawTypeByte: MessageType.deltaBatch.rawValue, payload: Self.documentsOfFields(4_000, subscription: 1))
        case .missingLongIDs:
            return FrameEncoder.frame(rawTypeByte: MessageType.missing.rawValue, payload: Self.steppedMissing(idLength: 1024, keys: 10_000))
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
    /// form, after a vocabulary of the 32 names; with `padding`, the first document has a 33rd
    /// field holding that many random bytes (which no compressor shrinks).
    static func documentsOfFields(_ count: Int, padding: Int = 0, subscription: UInt64 = 0) -> [UInt8] {
        let names = (0..<32).map { "f" + ($0 < 10 ? "0" : "") + String($0) }
        var w = ByteWriter(capacity: count * 68 + padding + 256)
        w.writeVarint(subscription == 0 ? 4 : 4 | 8)  // flags: a vocabulary, a subscription
        if subscription != 0 { w.writeVarint(subscription) }
        w.writeVarint(names.count)
        for name in names { w.writeString(name) }
        w.writeVarint(count)
        for i in 0..<count {
            if i == 0 { firstKey(idLength: 9, to: &w) } else { w.write(stepKeyHead) }
            let padded = i == 0 && padding > 0
            w.writeVarint(UInt64(names.count + (padded ? 1 : 0)) << 5 | 1 << 1)  // head: the root's fields, one stamp
            w.write(0)  // the stamp: the speaker's site (interned from its hello), time unchanged
            for n in 0..<names.count {
                w.write(0x80 | UInt8(n) << 2)  // a register of field n, written at stamp 0
                w.write(0xA0)  // the small int 0
            }
            if padded {
                // A field named "z" (new: its index, 32, is the table's size; 31 and a varint of
                // the rest in the general form), a register (slot header 1) holding a binary value.
                w.write(31)
                w.writeVarint(names.count - 31)
                w.writeString("z")
                w.write(1)
                w.write(0x07)
                var random = SplitMix64(seed: 17)
                w.writeLengthPrefixed((0..<padding).map { _ in UInt8.random(in: 0...255, using: &random) })
            }
        }
        return w.take()
    }
}
