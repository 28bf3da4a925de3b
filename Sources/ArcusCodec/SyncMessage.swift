import ArcusCRDT

/// Every message two peers exchange, one per frame.
public enum SyncMessage: Sendable, Equatable {
    case hello(Hello)
    case subscribe(Subscribe)
    case unsubscribe(subscriptionID: UInt64)
    case summary(Summary)
    case deltaBatch(DeltaBatch)
    case ack(Ack)
    case attachmentRequest(AttachmentRequest)
    case attachmentChunk(AttachmentChunk)
    case error(SyncError)
    case missing(MissingDocuments)
    case credentials(Credentials)
    case pushNote(PushNote)
    case reapedHorizon(ReapedHorizon)
    case reapCheck(ReapCheck)

    public var type: MessageType {
        switch self {
        case .hello: return .hello
        case .subscribe: return .subscribe
        case .unsubscribe: return .unsubscribe
        case .summary: return .summary
        case .deltaBatch: return .deltaBatch
        case .ack: return .ack
        case .attachmentRequest: return .attachmentRequest
        case .attachmentChunk: return .attachmentChunk
        case .error: return .error
        case .missing: return .missing
        case .credentials: return .credentials
        case .pushNote: return .pushNote
        case .reapedHorizon: return .reapedHorizon
        case .reapCheck: return .reapCheck
        }
    }
}

public enum MessageType: UInt8, Sendable, CaseIterable {
    case hello = 1, subscribe, unsubscribe, summary, deltaBatch, ack, attachmentRequest, attachmentChunk, error, missing, credentials, pushNote, reapedHorizon, reapCheck
}

/// The first message on a session: who is speaking and what it can do.
public struct Hello: Sendable, Equatable {
    /// The speaker's peer identity (its site id or a public key), at most 64 bytes.
    public var peerID: [UInt8]
    public var protocolVersion: UInt16
    public var capabilities: [String]
    public var name: String

    public init(peerID: [UInt8], protocolVersion: UInt16, capabilities: [String] = [], name: String = "") {
        self.peerID = peerID
        self.protocolVersion = protocolVersion
        self.capabilities = capabilities
        self.name = name
    }
}

/// "Send me the documents this query matches, and their changes, until I unsubscribe."
public struct Subscribe: Sendable, Equatable {
    public var subscriptionID: UInt64
    public var query: String
    public var arguments: Value

    public init(subscriptionID: UInt64, query: String, arguments: Value = .object([:])) {
        self.subscriptionID = subscriptionID
        self.query = query
        self.arguments = arguments
    }
}

/// What the sender has already seen, so the other side sends only what it lacks.
public struct Summary: Sendable, Equatable {
    /// The subscription summarised; 0 means the whole store.
    public var subscriptionID: UInt64
    public var version: VersionVector
    /// An optional digest of the matching documents (for cheap "already in sync" checks).
    public var digest: [UInt8]
    /// The receiver's change-log position up to which the sender has merged everything the
    /// receiver sent it for the subscription (its acknowledgements, as its own store keeps
    /// them): the receiver resumes from there. Absent: the receiver resumes from what it
    /// recorded itself. Zero: the sender's store may have lost its last commits (a power cut
    /// under `durability = normal`): the receiver goes over its log again from the start and
    /// sends what the summary does not claim, the sender's own events included.
    public var position: UInt64?

    public init(subscriptionID: UInt64 = 0, version: VersionVector, digest: [UInt8] = [], position: UInt64? = nil) {
        self.subscriptionID = subscriptionID
        self.version = version
        self.digest = digest
        self.position = position
    }
}

/// One document's delta.
public struct DocumentDelta: Sendable, Equatable {
    public var key: DocumentKey
    public var state: DocumentState

    public init(key: DocumentKey, state: DocumentState) {
        self.key = key
        self.state = state
    }
}

/// Deltas of many documents.
public struct DeltaBatch: Sendable, Equatable {
    public var documents: [DocumentDelta]
    /// When set, joining the batch brings the receiver to have seen everything this vector
    /// names (whole-store sync).
    public var covers: VersionVector?
    /// The sender's change-log position after this batch, for the receiver to acknowledge.
    public var position: UInt64?
    /// When set, `documents` hold whole states and each is sent as its changes since this
    /// version (`DocumentState.changes(since:)`), without building those deltas in memory;
    /// documents with no such changes are left out. Decoded batches never set it.
    public var since: VersionVector?
    /// The subscription the batch answers (0: none in particular, or the whole store). Its
    /// `covers` then holds for the documents that subscription matches.
    public var subscriptionID: UInt64
    /// How many of the receiver's summaries of the subscription this batch completes the
    /// answer to (0: none). Once every summary it sent is answered, the receiver has everything
    /// the sender had as of the latest one.
    public var answers: UInt64
    /// What of the answer to the receiver's summary is still to come after this batch, as the
    /// sender estimates it: for showing the progress of a long sync. Sent only to peers whose
    /// hello names `SyncBacklog.capability`.
    public var backlog: SyncBacklog?

    public init(documents: [DocumentDelta], covers: VersionVector? = nil, position: UInt64? = nil, since: VersionVector? = nil,
                subscriptionID: UInt64 = 0, answers: UInt64 = 0, backlog: SyncBacklog? = nil) {
        self.documents = documents
        self.covers = covers
        self.position = position
        self.since = since
        self.subscriptionID = subscriptionID
        self.answers = answers
        self.backlog = backlog
    }
}

/// The documents and bytes a server still has to send to answer a subscriber's summary: the
/// rows of its change log the backfill has not reached, and their bytes as they would go on
/// the wire (estimated from the backfill so far). An estimate: the query may pass over some of
/// those documents, a peer that has part of a document gets only the rest, and documents
/// written meanwhile join the backfill.
public struct SyncBacklog: Sendable, Equatable {
    public var documents: UInt64
    public var bytes: UInt64

    public init(documents: UInt64, bytes: UInt64) {
        self.documents = documents
        self.bytes = bytes
    }

    public static let none = SyncBacklog(documents: 0, bytes: 0)

    /// The hello capability of a peer that reads backlogs (peers without it would refuse the
    /// batch flag as unknown).
    public static let capability = "backlog"
}

/// "I have merged your batches for this subscription up to this position of your change log."
public struct Ack: Sendable, Equatable {
    public var position: UInt64
    public var subscriptionID: UInt64

    public init(position: UInt64, subscriptionID: UInt64 = 0) {
        self.position = position
        self.subscriptionID = subscriptionID
    }
}

/// "Send me bytes of this blob, starting at `offset`."
public struct AttachmentRequest: Sendable, Equatable {
    public var hash: [UInt8]
    public var offset: UInt64
    /// Most bytes wanted in one chunk.
    public var chunkSize: UInt32
    /// How many more peers may pass the request on when the receiver lacks the blob (0: none).
    public var hops: UInt8
    /// The blob's length as the requester's token says (nil from a peer that does not say). A
    /// peer whose blob has another length answers "not found"; a relay stages no more than this
    /// for it. The fetcher refuses chunks that disagree with it whatever the sender claims.
    public var length: UInt64?

    public init(hash: [UInt8], offset: UInt64 = 0, chunkSize: UInt32, hops: UInt8 = 0, length: UInt64? = nil) {
        self.hash = hash
        self.offset = offset
        self.chunkSize = chunkSize
        self.hops = hops
        self.length = length
    }
}

/// Credentials the sender passes on, opaque to sync: the certificates of the writers whose events
/// it is about to send, so that the receiver can check what each was allowed to write whoever
/// relays it, and the mesh authority's latest revocation list. The engine hands them to its
/// `SyncOrigins`, which checks them; sent only to peers whose hello lists `capability`.
public struct Credentials: Sendable, Equatable {
    public enum Kind: UInt8, Sendable {
        case certificate = 1
        case revocations = 2
    }

    public struct Item: Sendable, Equatable {
        /// A kind this side does not know is kept as its raw value and ignored by the engine.
        public var kind: UInt8
        public var bytes: [UInt8]

        public init(kind: UInt8, bytes: [UInt8]) {
            self.kind = kind
            self.bytes = bytes
        }

        public init(_ kind: Kind, bytes: [UInt8]) { self.init(kind: kind.rawValue, bytes: bytes) }
    }

    public var items: [Item]

    public init(items: [Item]) { self.items = items }

    /// Most items in one message, and most bytes in one item (a certificate takes at most
    /// about 17 KB; a revocation list of 2,000 peers about 32 KB).
    public static let maximumItems = 64
    public static let maximumItemBytes = 64 << 10

    /// The hello capability of a peer that reads credentials.
    public static let capability = "credentials"
}

/// "I lack these documents of the subscription, though the summary that follows says I have
/// seen their events (I evicted them): send them whole." Sent just before that summary.
public struct MissingDocuments: Sendable, Equatable {
    public var subscriptionID: UInt64
    /// In key order.
    public var keys: [DocumentKey]

    public init(subscriptionID: UInt64, keys: [DocumentKey]) {
        self.subscriptionID = subscriptionID
        self.keys = keys
    }
}

public struct AttachmentChunk: Sendable, Equatable {
    public var hash: [UInt8]
    public var offset: UInt64
    public var totalLength: UInt64
    public var bytes: [UInt8]

    public init(hash: [UInt8], offset: UInt64, totalLength: UInt64, bytes: [UInt8]) {
        self.hash = hash
        self.offset = offset
        self.totalLength = totalLength
        self.bytes = bytes
    }
}

/// Why the sender is ending the session or refusing a request.
public struct SyncError: Sendable, Equatable {
    public var code: UInt32
    public var message: String

    public init(code: UInt32, message: String) {
        self.code = code
        self.message = message
    }
}

extension AttachmentChunk {
    /// The most blob bytes one chunk can carry in a frame of at most `frameSize` bytes, counted
    /// exactly as `FrameEncoder` lays the frame out uncompressed (compression only ever makes a
    /// frame smaller). 0 when not even an empty chunk fits.
    public static func capacity(frameSize: Int, hashLength: Int = 32, offset: UInt64, totalLength: UInt64) -> Int {
        let fixed = varintSize(UInt64(hashLength)) + hashLength + varintSize(offset) + varintSize(totalLength)
        func frameLength(_ count: Int) -> Int {
            let payload = fixed + varintSize(UInt64(count)) + count
            return 1 + varintSize(UInt64(payload)) + payload + 4
        }
        // The varints grow by at most a few bytes: start at the upper bound and step down.
        var count = max(0, frameSize - fixed - 5)
        while count > 0 && frameLength(count) > frameSize { count -= 1 }
        return frameLength(count) <= frameSize ? count : 0
    }

    private static func varintSize(_ value: UInt64) -> Int {
        var size = 1, rest = value >> 7
        while rest != 0 { size += 1; rest >>= 7 }
        return size
    }
}
