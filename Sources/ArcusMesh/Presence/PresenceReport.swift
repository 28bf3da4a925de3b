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

        /// The longest encoding of a report within the limits above, every varint at its widest
        /// (9,423 bytes): what a presence frame may carry, checked before it is decoded.
        public static let encodedBytes: Int = {
            let string = { (limit: Int) in varintBytes(limit) + limit }
            let header = 1 + PeerID.size + varintBytes(UInt64.max)
            let metadata = varintBytes(metadataEntries) + metadataEntries * (string(metadataKeyBytes) + string(metadataValueBytes))
            let table = varintBytes(links) + links * PeerID.size
            // Per link: flags, its neighbour's index in the table (one byte below 128), the round trip
            // (a UInt32) and the throughput (a UInt64).
            let indices = (0..<links).reduce(0) { $0 + varintBytes($1) }
            let link = 1 + varintBytes(UInt32.max) + varintBytes(UInt64.max)
            return header + string(nameBytes) + metadata + table + varintBytes(links) + indices + links * link
        }()

        private static func varintBytes(_ value: some BinaryInteger) -> Int {
            var value = UInt64(value), count = 1
            while value >= 0x80 {
                value >>= 7
                count += 1
            }
            return count
        }
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
