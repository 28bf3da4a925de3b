import ArcusSync
import Foundation
import Logging

extension Agent {
    /// How often tombstones past their lifetime are looked for (and once shortly after start).
    static let reapingInterval: Duration = .seconds(3600)

    /// The tombstone lifetime in force: ALTER SYSTEM's, else the configuration's (seconds; 0:
    /// never reap).
    var tombstoneLifetimeInForce: Int { tombstoneLifetime.withLock { $0 } ?? configuration.tombstoneLifetimeSeconds }

    /// Reaps the tombstones of documents removed longer than `tombstone_lifetime_s` ago, shortly
    /// after start and then every `reapingInterval` (or at once after `reapSoon()`), until
    /// cancelled (Docs/Sync.md "Reaped tombstones").
    func reapTombstones() async {
        var last: ContinuousClock.Instant?
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            let asked = reapRequested.withLock { requested in
                defer { requested = false }
                return requested
            }
            if !asked, let last, ContinuousClock.now - last < Self.reapingInterval { continue }
            if !asked, last == nil, ContinuousClock.now - startedAt < .seconds(10) { continue }
            last = .now
            let lifetime = tombstoneLifetimeInForce
            guard lifetime > 0 else { continue }
            do {
                let reaped = try engine.reapTombstones(olderThan: .seconds(lifetime))
                for (collection, count) in reaped.sorted(by: { $0.key < $1.key }) {
                    logger.info("reaped tombstones of documents removed more than \(lifetime) s ago", metadata: ["collection": "\(collection)", "count": "\(count)"])
                }
            } catch {
                logger.warning("could not reap tombstones: \(error)")
            }
        }
    }

    /// Looks for tombstones to reap within a second (the lifetime changed).
    func reapSoon() { reapRequested.withLock { $0 = true } }
}
