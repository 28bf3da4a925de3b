import ArcusCodec

/// The wire form of a report, sized for one BLE packet (a report with four links to three
/// neighbours takes 108 bytes; see Docs/Presence.md):
///
/// ```
/// version            1 byte (1)
/// origin             16 bytes
/// sequence           varint
/// name               varint length, UTF-8
/// metadata           varint count, then key and value strings, keys strictly ascending
/// neighbour table    varint count, then 16-byte ids, distinct, none the origin
/// links              varint count, then per link:
///   flags            1 byte: bits 0-2 kind, 3 active, 4 rtt follows, 5 throughput follows
///   neighbour        varint index into the table
///   rtt              varint milliseconds (if flagged)
///   throughput       varint bytes per second (if flagged)
/// ```
///
/// A neighbour reached by several transports is written once, in the table. Decoding bounds every
/// length and count by `PresenceReport.Limits` and by the bytes left, and throws `CodecError`.
extension PresenceReport {
    static let formatVersion: UInt8 = 1

    private enum Flag {
        static let kindMask: UInt8 = 0b0000_0111
        static let active: UInt8 = 0b0000_1000
        static let rtt: UInt8 = 0b0001_0000
        static let throughput: UInt8 = 0b0010_0000
        static let known: UInt8 = kindMask | active | rtt | throughput
    }

    /// The report's bytes. A report that fails `validate()` still encodes, but peers refuse it.
    public func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 64 + links.count * 24)
        writer.write(Self.formatVersion)
        writer.write(contentsOf: origin.bytes)
        writer.writeVarint(sequence)
        writer.writeString(name)
        writer.writeVarint(metadata.count)
        for key in metadata.keys.sorted(by: Self.utf8Ascending) {
            writer.writeString(key)
            writer.writeString(metadata[key]!)
        }
        var table: [PeerID] = []
        var index: [PeerID: Int] = [:]
        for link in links where index[link.peer] == nil {
            index[link.peer] = table.count
            table.append(link.peer)
        }
        writer.writeVarint(table.count)
        for peer in table { writer.write(contentsOf: peer.bytes) }
        writer.writeVarint(links.count)
        for link in links {
            var flags = Self.wireCode(link.kind)
            if link.quality.isActive { flags |= Flag.active }
            if link.quality.rttMilliseconds != nil { flags |= Flag.rtt }
            if link.quality.throughput != nil { flags |= Flag.throughput }
            writer.write(flags)
            writer.writeVarint(index[link.peer]!)
            if let rtt = link.quality.rttMilliseconds { writer.writeVarint(UInt64(rtt)) }
            if let throughput = link.quality.throughput { writer.writeVarint(throughput) }
        }
        return writer.take()
    }

    /// Decodes a report from untrusted bytes: a whole report and nothing after it.
    public init(decoding bytes: [UInt8]) throws(CodecError) {
        var reader = ByteReader(bytes)
        let version = try reader.readByte()
        guard version == Self.formatVersion else {
            throw .unknownTag(what: "presence report version (this build reads 1)", tag: version, offset: 0)
        }
        let origin = try Self.readPeerID(&reader)
        let sequence = try reader.readVarint()
        let name = try reader.readString(limit: Limits.nameBytes)

        let metadataCount = try reader.readCount("metadata entries", limit: Limits.metadataEntries, minimumItemSize: 2)
        var metadata: [String: String] = [:]
        var previousKey: String?
        for _ in 0..<metadataCount {
            let keyOffset = reader.offset
            let key = try reader.readString(limit: Limits.metadataKeyBytes)
            if let previousKey, !Self.utf8Ascending(previousKey, key) {
                throw .invalidValue("metadata key at offset \(keyOffset) is not after the one before it (keys are sorted and distinct)")
            }
            // Canonically equal strings with different bytes are one dictionary key.
            guard metadata[key] == nil else { throw .invalidValue("metadata key at offset \(keyOffset) repeats an earlier one") }
            metadata[key] = try reader.readString(limit: Limits.metadataValueBytes)
            previousKey = key
        }

        let tableCount = try reader.readCount("neighbour table entries", limit: Limits.links, minimumItemSize: PeerID.size)
        var table: [PeerID] = []
        table.reserveCapacity(tableCount)
        for _ in 0..<tableCount {
            let entryOffset = reader.offset
            let peer = try Self.readPeerID(&reader)
            guard peer != origin, !table.contains(peer) else {
                throw .invalidValue("neighbour table entry at offset \(entryOffset) repeats the origin or an earlier entry")
            }
            table.append(peer)
        }

        let linkCount = try reader.readCount("presence links", limit: Limits.links, minimumItemSize: 2)
        var links: [Neighbour] = []
        links.reserveCapacity(linkCount)
        var seen = Set<Edge>()
        for _ in 0..<linkCount {
            let linkOffset = reader.offset
            let flags = try reader.readByte()
            guard flags & ~Flag.known == 0, let kind = Self.kind(wireCode: flags & Flag.kindMask) else {
                throw .unknownTag(what: "presence link flags", tag: flags, offset: linkOffset)
            }
            let slot = try reader.readVarint()
            guard slot < UInt64(table.count) else { throw .badReference(what: "neighbour", index: slot) }
            let peer = table[Int(slot)]
            var quality = LinkQuality(isActive: flags & Flag.active != 0)
            if flags & Flag.rtt != 0 {
                let rtt = try reader.readVarint()
                guard rtt <= UInt64(UInt32.max) else {
                    throw .limitExceeded(what: "round-trip milliseconds", value: rtt, limit: UInt64(UInt32.max))
                }
                quality.rttMilliseconds = UInt32(rtt)
            }
            if flags & Flag.throughput != 0 { quality.throughput = try reader.readVarint() }
            guard seen.insert(Edge(peer: peer, kind: kind)).inserted else {
                throw .invalidValue("link at offset \(linkOffset) repeats the \(kind.rawValue) link to \(peer)")
            }
            links.append(Neighbour(peer: peer, kind: kind, quality: quality))
        }
        try reader.expectEnd()
        self.init(origin: origin, name: name, sequence: sequence, metadata: metadata, links: links)
    }

    private static func readPeerID(_ reader: inout ByteReader) throws(CodecError) -> PeerID {
        // readBytes checked the length, so the id is always whole.
        PeerID(bytes: try reader.readBytes(PeerID.size))!
    }

    /// Keys in byte order, which every platform agrees on (String's `<` compares differently).
    private static func utf8Ascending(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// Fixed codes: `LinkKind`'s case order is a preference and may change; the wire may not.
    private static func wireCode(_ kind: LinkKind) -> UInt8 {
        switch kind {
        case .lan: return 0
        case .bluetooth: return 1
        case .cloud: return 2
        case .loopback: return 3
        }
    }

    private static func kind(wireCode: UInt8) -> LinkKind? {
        switch wireCode {
        case 0: return .lan
        case 1: return .bluetooth
        case 2: return .cloud
        case 3: return .loopback
        default: return nil
        }
    }
}
