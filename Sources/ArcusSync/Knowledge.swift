import ArcusCRDT
import ArcusCodec
import Crypto

/// Version vectors as sync uses them: what a peer has seen of a subscription's documents.
extension VersionVector {
    /// Each site's time lowered to just below `floor`'s time for that site, where it reached
    /// it: after an eviction, a store must not claim the events it no longer holds.
    func lowered(below floor: VersionVector) -> VersionVector {
        var result = VersionVector()
        for element in elements {
            var time = element.time
            if let limit = floor[element.site], time >= limit {
                guard limit.rawValue > 0 else { continue }
                time = Timestamp(rawValue: limit.rawValue - 1)
            }
            result.observe(Stamp(time: time, site: element.site))
        }
        return result
    }

    /// Eight bytes that change when the vector does (the same in every process), so a peer can
    /// say "what I told you last time" without repeating it.
    var digest: [UInt8] {
        var encoder = EncodingContext()
        var writer = ByteWriter(capacity: 16 + 16 * count)
        encoder.writeVersion(self, to: &writer)
        return Array(SHA256.hash(data: writer.bytes).prefix(8))
    }
}

extension DocumentState {
    /// The earliest event of each site in the state: evicting it takes these and every later
    /// event of the document away.
    var earliestEvents: VersionVector {
        var earliest: [SiteID: Timestamp] = [:]
        forEachEvent { stamp in
            if let seen = earliest[stamp.site], seen <= stamp.time { return }
            earliest[stamp.site] = stamp.time
        }
        return VersionVector(earliest)
    }
}
