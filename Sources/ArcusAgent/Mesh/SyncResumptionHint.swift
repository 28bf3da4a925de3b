import ArcusMesh

/// What the sync layer tells its peer when a link resumes (the `MeshHandshake` hint), for the two
/// things a side may hold from the pair's last session — the peer's sync hello and the codec
/// contexts — as a pair of 4-byte tags each: one for what it sends (its own hello, its encoder's
/// context) and one for what it holds of the peer's (the peer's hello, its decoder's context);
/// zeros for nothing. A direction goes on from what is held when the sender's outgoing tag
/// equals the receiver's incoming tag, which both ends see alike before the session starts.
struct SyncResumptionHint: Sendable, Equatable {
    static let tagSize = 4
    static let none = [UInt8](repeating: 0, count: tagSize)

    struct Tags: Sendable, Equatable {
        var outgoing: [UInt8]
        var incoming: [UInt8]

        /// Whether this side's outgoing direction goes on (the peer holds what it sends), and its
        /// incoming one (it holds what the peer sends), given the peer's tags.
        func agreement(with theirs: Tags) -> (sending: Bool, receiving: Bool) {
            (outgoing != SyncResumptionHint.none && outgoing == theirs.incoming,
             incoming != SyncResumptionHint.none && incoming == theirs.outgoing)
        }
    }

    var hello: Tags
    var codec: Tags

    var bytes: [UInt8] { hello.outgoing + hello.incoming + codec.outgoing + codec.incoming }

    init(hello: Tags, codec: Tags) {
        self.hello = hello
        self.codec = codec
    }

    /// Nil unless `bytes` is a whole hint (another build's, or none).
    init?(_ bytes: [UInt8]) {
        guard bytes.count == 4 * Self.tagSize else { return nil }
        let tags = stride(from: 0, to: bytes.count, by: Self.tagSize).map { Array(bytes[$0..<$0 + Self.tagSize]) }
        self.init(hello: Tags(outgoing: tags[0], incoming: tags[1]), codec: Tags(outgoing: tags[2], incoming: tags[3]))
    }

    /// Both sides' hints of a resumed link; nil after a full handshake or with a malformed hint.
    static func of(_ resumption: ResumptionHints?) -> (ours: SyncResumptionHint, theirs: SyncResumptionHint)? {
        guard let resumption, let ours = SyncResumptionHint(resumption.sent), let theirs = SyncResumptionHint(resumption.received) else {
            return nil
        }
        return (ours, theirs)
    }
}
