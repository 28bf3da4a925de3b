/// The documented maxima every decoder enforces on untrusted bytes, before allocating
/// (README, "Limits", says why each is what it is).
///
/// Counts are also bounded by the bytes left (every element takes at least one byte), and what
/// a frame decodes to by `maximumDecodedBytes`, so no frame can make a decoder take more memory
/// than that allowance, however well its bytes compress or however much each byte stands for.
public struct CodecLimits: Sendable, Hashable {
    /// Largest frame payload accepted, on the wire or once expanded.
    public var maximumFrameLength: Int = 8 << 20
    /// Most a compressed payload may expand: its expanded length over its compressed length.
    /// The encoder leaves a payload uncompressed rather than exceed it.
    public var maximumExpansionRatio: Int = 256
    /// Most memory decoding one frame may make, in bytes (see `DecodeAllowance`): the expanded
    /// payload and everything materialised from it.
    public var maximumDecodedBytes: Int = 16 << 20
    /// Deepest nesting of arrays, objects and maps (the same as `Value.maximumNestingDepth`).
    public var maximumDepth: Int = 64
    /// Longest string (bytes) or binary value.
    public var maximumStringLength: Int = 4 << 20
    /// Most sites, collections, field names or strings one session may intern.
    public var maximumInternedItems: Int = 1 << 16
    /// Most bytes of interned strings one session may hold.
    public var maximumInternedBytes: Int = 4 << 20
    /// Most documents in one delta batch (a sender cuts batches far smaller: see
    /// `SyncSession.batchSize`).
    public var maximumDocumentsPerBatch: Int = 1 << 16
    /// Most keys in one `missing` message: a subscriber names at most this many evicted
    /// documents (ArcusSync's missing limit is this number).
    public var maximumMissingKeys: Int = 10_000

    public init() {}

    public static let standard = CodecLimits()
}
