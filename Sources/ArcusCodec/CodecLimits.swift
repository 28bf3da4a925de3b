/// The documented maxima every decoder enforces on untrusted bytes, before allocating.
///
/// Counts are also bounded by the bytes left (every element takes at least one byte), so a
/// short hostile frame can never make a decoder reserve more than a few times its own size.
public struct CodecLimits: Sendable, Hashable {
    /// Largest frame payload accepted.
    public var maximumFrameLength: Int = 16 << 20
    /// Deepest nesting of arrays, objects and maps (the same as `Value.maximumNestingDepth`).
    public var maximumDepth: Int = 64
    /// Longest string (bytes) or binary value.
    public var maximumStringLength: Int = 4 << 20
    /// Most sites, collections, field names or strings one session may intern.
    public var maximumInternedItems: Int = 1 << 16
    /// Most bytes of interned strings one session may hold.
    public var maximumInternedBytes: Int = 4 << 20
    /// Most documents in one delta batch.
    public var maximumDocumentsPerBatch: Int = 1 << 20

    public init() {}

    public static let standard = CodecLimits()
}
