import ArcusCodec

/// What one peer tells the mesh about itself: its id and name, a sequence number that only grows,
/// and its direct links. Reports are relayed hop by hop; every peer keeps the latest one from each
/// origin, and its `PresenceGraph` is the union of them (see `PresenceTracker`).
///
/// Reports are not signed: any member of the mesh can relay, and so could forge, a report in
/// another peer's name. They describe the mesh; they grant nothing.
public struct PresenceReport: Sendable, Hashable {
    /// One direct link of the origin.
    public struct Neighbour: Sendable, Hashable {
        public var peer: PeerID
        public var kind: LinkKind
        public var quality: LinkQuality

        public init(peer: PeerID, kind: LinkKind, quality: LinkQuality = LinkQuality()) {
            self.peer = peer
            self.kind = kind
            self.quality = quality
        }
    }

    /// What a report may hold; decoding refuses more before allocating anything.
    public enum Limits {
        public static let nameBytes = 64
        public static let metadataEntries = 8
        public static let metadataKeyBytes = 32
        public static let metadataValueBytes = 64
        /// Links of one report, and distinct neighbours in its table.
        public static let links = 255
    }

    public var origin: PeerID
    public var name: String
    /// Grows with every report the origin makes; a receiver keeps the highest it has seen.
    public var sequence: UInt64
    public var metadata: [String: String]
    /// At most one per neighbour and kind, never to the origin itself.
    public var links: [Neighbour]

    public init(origin: PeerID, name: String, sequence: UInt64, metadata: [String: String] = [:], links: [Neighbour] = []) {
        self.origin = origin
        self.name = name
        self.sequence = sequence
        self.metadata = metadata
        self.links = links
    }

    /// Checks what the decoder checks, so a report that passes reaches every peer.
    public func validate() throws(CodecError) {
        try Self.check("peer name length", name.utf8.count, Limits.nameBytes)
        try Self.check("metadata entries", metadata.count, Limits.metadataEntries)
        for (key, value) in metadata {
            try Self.check("metadata key length", key.utf8.count, Limits.metadataKeyBytes)
            try Self.check("metadata value length", value.utf8.count, Limits.metadataValueBytes)
        }
        try Self.check("presence links", links.count, Limits.links)
        var seen = Set<Edge>()
        for link in links {
            guard link.peer != origin else { throw .invalidValue("presence report of \(origin) lists a link to itself") }
            guard seen.insert(Edge(peer: link.peer, kind: link.kind)).inserted else {
                throw .invalidValue("presence report of \(origin) lists its \(link.kind.rawValue) link to \(link.peer) twice")
            }
        }
    }

    struct Edge: Hashable {
        let peer: PeerID
        let kind: LinkKind
    }

    private static func check(_ what: String, _ value: Int, _ limit: Int) throws(CodecError) {
        guard value <= limit else { throw .limitExceeded(what: what, value: UInt64(value), limit: UInt64(limit)) }
    }
}
