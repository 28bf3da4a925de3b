import ArcusCRDT

/// A checksum of everything a stream's context carries from one frame to the next — the interned
/// sites, collections, field names and strings in index order, and the delta-coding state — the
/// same for an `EncodingContext` and the `DecodingContext` that decoded every frame it encoded.
/// Two peers that want to go on with a stream's context in a later session (see
/// `CodecContinuation` in ArcusSync) compare digests first: a context used against a different
/// one would decode names wrongly, so a mismatch means starting afresh.
struct ContextDigest {
    private var crc: UInt32 = 0

    mutating func add(_ bytes: some Collection<UInt8>) { crc = CRC32C.update(crc, bytes) }

    mutating func add(_ value: UInt64) {
        add((0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) })
    }

    mutating func add(_ string: String) {
        add(UInt64(string.utf8.count))
        add(Array(string.utf8))
    }

    mutating func add(table strings: [String]) {
        add(UInt64(strings.count))
        for string in strings { add(string) }
    }

    static func of(
        sites: [SiteID], collections: [String], fieldNames: [String], strings: [String], lastTime: Timestamp,
        lastDocumentID: [UInt8], lastCollection: String?
    ) -> UInt32 {
        var digest = ContextDigest()
        digest.add(UInt64(sites.count))
        for site in sites { digest.add(site.rawValue) }
        digest.add(table: collections)
        digest.add(table: fieldNames)
        digest.add(table: strings)
        digest.add(lastTime.rawValue)
        digest.add(UInt64(lastDocumentID.count))
        digest.add(lastDocumentID)
        digest.add(lastCollection.map { [1] + Array($0.utf8) } ?? [0])
        return digest.crc
    }
}

extension EncodingContext {
    /// See `ContextDigest`.
    public var digest: UInt32 {
        ContextDigest.of(
            sites: sites.items, collections: collections.items, fieldNames: fieldNames.items, strings: strings.items,
            lastTime: lastTime, lastDocumentID: lastDocumentID, lastCollection: lastCollection
        )
    }

    /// Bytes of names and strings interned so far (what keeping the context costs in memory).
    public var internedBytes: Int { budget.bytes }
}

extension DecodingContext {
    /// See `ContextDigest`.
    public var digest: UInt32 {
        ContextDigest.of(
            sites: sites.items, collections: collections.items, fieldNames: fieldNames.items, strings: strings.items,
            lastTime: lastTime, lastDocumentID: lastDocumentID, lastCollection: lastCollection
        )
    }

    public var internedBytes: Int { budget.bytes }
}
