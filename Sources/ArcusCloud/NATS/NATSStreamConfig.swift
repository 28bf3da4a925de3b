/// A JetStream stream: which subjects it captures and how much it keeps. When a limit is
/// reached the oldest messages are dropped (discard policy "old").
public struct NATSStreamConfig: Sendable, Hashable {
    public enum Storage: Sendable, Hashable {
        /// On disk in the server's store directory; survives a server restart.
        case file
        /// In the server's memory; lost when it restarts.
        case memory
    }

    public var name: String
    public var subjects: [String]
    /// Messages older than this are dropped; `.zero` keeps them regardless of age.
    public var maxAge: Duration
    /// The stream keeps at most this many bytes; `-1` means no limit.
    public var maxBytes: Int
    public var storage: Storage

    public init(name: String, subjects: [String], maxAge: Duration = .zero, maxBytes: Int = -1, storage: Storage = .file) {
        self.name = name
        self.subjects = subjects
        self.maxAge = maxAge
        self.maxBytes = maxBytes
        self.storage = storage
    }
}

/// What a stream holds now.
public struct NATSStreamState: Sendable, Hashable {
    public var messages: UInt64
    public var bytes: UInt64
    public var firstSequence: UInt64
    public var lastSequence: UInt64
    /// The limits the server applies, as it reports them.
    public var maxBytes: Int64
}
