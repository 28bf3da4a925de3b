import ArcusCRDT

/// What decoding one frame may still make, in bytes of memory: `CodecLimits.maximumDecodedBytes`
/// for each frame a `FrameDecoder` decodes, unlimited for a bare `DecodingContext` (a store
/// reading back its own documents).
///
/// The wire size alone bounds nothing: a one-byte key can stand for a 1 KiB id, a one-byte field
/// for two 40-byte cells and a value, and a compressed payload for 8 MiB. So every decoder
/// charges what it is about to make — the expanded payload, each string, id and byte string
/// copied out of it, each value, cell, stamp, version entry, key and document — before the
/// memory is reserved, and a frame that would decode to more than the allowance is refused
/// (`CodecError.limitExceeded`) having allocated at most the allowance. Items shared with the
/// session's intern tables cost nothing more.
struct DecodeAllowance: Sendable {
    let limit: Int
    private(set) var used = 0

    init(limit: Int) { self.limit = limit }

    static let unlimited = DecodeAllowance(limit: .max)

    /// Charges `bytes`; throws when the total passes the limit.
    @inline(__always)
    mutating func charge(_ bytes: Int) throws(CodecError) {
        let (total, overflow) = used.addingReportingOverflow(bytes)
        guard !overflow, total <= limit else { throw refusal(total, overflow) }
        used = total
    }

    /// Charges `count` items of `size` bytes each (a reservation), with no overflow.
    @inline(__always)
    mutating func charge(_ count: Int, each size: Int) throws(CodecError) {
        let (bytes, overflow) = count.multipliedReportingOverflow(by: size)
        guard !overflow else { throw refusal(.max, true) }
        try charge(bytes)
    }

    private func refusal(_ total: Int, _ overflow: Bool) -> CodecError {
        .limitExceeded(what: "memory one frame decodes to (bytes of its strings, ids, values, cells and documents)",
                       value: overflow ? .max : UInt64(total), limit: UInt64(limit))
    }
}

/// What each decoded item is charged: the bytes it takes in its container and on the heap.
/// Conservative, not exact: allocator rounding and array growth are left to the margin between
/// `CodecLimits.maximumDecodedBytes` and the peak the amplification benchmark measures.
enum DecodedCost {
    /// A value's slot in an array, a document's value table or a dictionary.
    static let value = MemoryLayout<Value>.stride
    /// A cell of a document's layout.
    static let cell = MemoryLayout<Cell>.stride
    /// A stamp in a document's stamp list, and the version entry it may add.
    static let stamp = 2 * MemoryLayout<Stamp>.stride
    /// One entry of a version vector: the dictionary slot it is read into, at half load, and
    /// the sorted element it becomes.
    static let versionEntry = 3 * MemoryLayout<VersionVector.Element>.stride + 16
    /// One entry of an object value or attachment metadata: key and value, at half load.
    static let objectEntry = 2 * (MemoryLayout<String>.stride + MemoryLayout<Value>.stride)
    /// A document of a batch, beyond its cells and values: its key, the decoder's record of it,
    /// and the `DocumentDelta` and `DocumentState` it becomes.
    static let document = 4 * MemoryLayout<DocumentKey>.stride + MemoryLayout<DocumentState>.stride + 64
    /// A key of a `missing` message, beyond its id's bytes.
    static let key = 2 * MemoryLayout<DocumentKey>.stride
    /// A name's slot in a document's name table.
    static let name = MemoryLayout<String>.stride
    /// An attachment token's slot in a document's attachment table.
    static let attachment = MemoryLayout<AttachmentToken>.stride
    /// A heap object's header and the allocator's rounding, for each string or byte array.
    static let heapObject = 48

    /// A string of `byteCount` UTF-8 bytes made from the wire: nothing beyond its slot when it
    /// fits in the slot (15 bytes or fewer), otherwise its bytes and a heap object.
    @inline(__always)
    static func string(_ byteCount: Int) -> Int { byteCount <= 15 ? 0 : byteCount + heapObject }

    /// A byte array of `count` bytes made from the wire.
    @inline(__always)
    static func bytes(_ count: Int) -> Int { count + heapObject }
}
