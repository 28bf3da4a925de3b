import ArcusCodec

/// The codec contexts a session starts from instead of empty ones: those a previous session
/// between the same two peers ended with, so that the sites, collections, field names and strings
/// it interned are not spelled out again — most of what a short session between devices that
/// meet again and again would send twice. Each direction goes on only when both ends hold the same
/// context for it, which the caller checks (`EncodingContext.digest`, `DecodingContext.digest`)
/// before passing it; nil starts that direction afresh.
public struct CodecContinuation: Sendable {
    /// For the frames this side sends.
    public var encoding: EncodingContext?
    /// For the frames the peer sends.
    public var decoding: DecodingContext?

    public init(encoding: EncodingContext? = nil, decoding: DecodingContext? = nil) {
        self.encoding = encoding
        self.decoding = decoding
    }
}
