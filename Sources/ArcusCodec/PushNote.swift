import ArcusCRDT

/// A subscriber's word to a server on how to push the live changes of its subscriptions (lazy
/// push, issue 20), and what it has merged meanwhile.
///
/// A subscriber handed the same live change by two servers asks the later one to push lazily:
/// it then holds that subscription's live changes a while and sends only what the subscriber
/// still lacks after it, as far as this note's `has` told it. A lazy server whose batch brings
/// something new is asked to push eagerly again. Sent only to peers whose hello names
/// `capability`; a peer trusts a note only about the sender itself (a note can make a server
/// withhold from the sender, nothing else).
public struct PushNote: Sendable, Equatable {
    /// Subscriptions (the sender's ids) whose live changes the sender wants held and sent only
    /// if still missing.
    public var lazy: [UInt64]
    /// Subscriptions whose live changes the sender wants pushed at once again.
    public var eager: [UInt64]
    /// Subscriptions of the receiver's (its ids) it asked the sender to push lazily, which the
    /// sender goes on pushing eagerly: no other of its peers is pushed them at once, and one
    /// path out of every store stays eager.
    public var refused: [UInt64]
    /// Documents the sender has merged, each with the events it has of it, in key order.
    public var has: [DocumentVersion]

    public init(lazy: [UInt64] = [], eager: [UInt64] = [], refused: [UInt64] = [], has: [DocumentVersion] = []) {
        self.lazy = lazy
        self.eager = eager
        self.refused = refused
        self.has = has
    }

    /// Most subscription ids in `lazy`, `eager` and `refused` together.
    public static let maximumSubscriptions = 256
    /// Most documents in `has`; a sender with more sends another note.
    public static let maximumDocuments = 4096
    /// The hello capability of a peer that reads push notes.
    public static let capability = "lazy-push"
}

/// One document's key and the events some store has of it.
public struct DocumentVersion: Sendable, Equatable {
    public var key: DocumentKey
    public var version: VersionVector

    public init(key: DocumentKey, version: VersionVector) {
        self.key = key
        self.version = version
    }
}
