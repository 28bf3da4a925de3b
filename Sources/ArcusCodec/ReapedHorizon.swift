import ArcusCRDT

/// A server's reaped horizon for a subscription's collection (issue 21, Docs/Sync.md "Reaped
/// tombstones"): the union of the versions of the tombstones it reaped there. Sent, to a peer
/// whose hello names `capability`, when the peer's summary does not cover it — the peer was
/// away while documents were removed and their tombstones reaped — and again with the answers
/// to its `ReapCheck`s: for each document asked about, the events of the cells under the horizon
/// the server holds of it (none: it reaped it, or never had it), or that it cannot say (it is
/// fetching the document back after an eviction). The peer then drops its cells of those
/// documents under the horizon that the server does not hold, as the reaped tombstones would
/// have.
public struct ReapedHorizon: Sendable, Equatable {
    /// The subscription (the receiver's id for it).
    public var subscriptionID: UInt64
    public var horizon: VersionVector
    /// Answers to a check, in key order; empty in the first notice.
    public var held: [HeldEvents]
    /// Documents asked about that the server cannot answer for, in key order.
    public var unknown: [DocumentKey]
    /// Whether this answers a check (else it is the notice that starts one).
    public var answersCheck: Bool

    public init(subscriptionID: UInt64, horizon: VersionVector, held: [HeldEvents] = [], unknown: [DocumentKey] = [], answersCheck: Bool = false) {
        self.subscriptionID = subscriptionID
        self.horizon = horizon
        self.held = held
        self.unknown = unknown
        self.answersCheck = answersCheck
    }

    /// The hello capability of a peer that reads reaped horizons and sends checks.
    public static let capability = "reap"
    /// Most documents one check names (and one answer lists).
    public static let maximumDocuments = 1024
    /// Most events one answer lists, over all its documents.
    public static let maximumEvents = 65_536
}

/// The events of one document's cells under a reaped horizon that a store holds.
public struct HeldEvents: Sendable, Equatable {
    public var key: DocumentKey
    /// Distinct, in order.
    public var events: [Stamp]

    public init(key: DocumentKey, events: [Stamp]) {
        self.key = key
        self.events = events
    }
}

/// A subscriber's question after a `ReapedHorizon` notice: which of these documents, which it
/// holds with events under the horizon, the server still holds, and with which events.
public struct ReapCheck: Sendable, Equatable {
    public var subscriptionID: UInt64
    /// In key order, at most `ReapedHorizon.maximumDocuments`.
    public var keys: [DocumentKey]

    public init(subscriptionID: UInt64, keys: [DocumentKey]) {
        self.subscriptionID = subscriptionID
        self.keys = keys
    }
}
