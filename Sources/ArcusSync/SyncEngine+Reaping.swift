import ArcusCRDT
import ArcusStore
import Foundation

extension SyncEngine {
    /// Reaps the tombstones of documents removed more than `lifetime` ago (Docs/Sync.md "Reaped
    /// tombstones"), in every collection, as far as this store can vouch it has seen every event
    /// they name: what its subscriptions of the whole collection (or store) know, and its own
    /// writes. Peers that were away are brought to the raised horizon when they next sync.
    /// Returns how many were reaped per collection.
    @discardableResult
    public func reapTombstones(olderThan lifetime: Duration) throws -> [String: Int] {
        let milliseconds = UInt64(max(0, (Date().timeIntervalSince1970 - Double(lifetime.components.seconds)) * 1000))
        let cutoff = Timestamp(rawValue: min(milliseconds, Timestamp.maxMilliseconds) << 16)
        let site = store.site
        return try store.reapTombstones(olderThan: cutoff, known: { collection in
            let own = store.version[site].map { VersionVector(Stamp(time: $0, site: site)) } ?? VersionVector()
            return (claim { $0.matchesAll(of: collection) } ?? VersionVector()).union(own)
        }, withheld: withheld)
    }
}
