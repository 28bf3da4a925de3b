import ArcusMesh
import ArcusTestSupport
import Synchronization

/// Peers, reports and a hand-moved clock for the presence tests.
enum PresenceFixtures {
    /// A peer id whose 16 bytes are all `n`: readable in failures, and ordered by `n`.
    static func peer(_ n: UInt8) -> PeerID { PeerID(bytes: [UInt8](repeating: n, count: PeerID.size))! }

    static func randomPeer(_ rng: inout SeededRandom) -> PeerID {
        PeerID(bytes: (0..<PeerID.size).map { _ in UInt8.random(in: 0...255, using: &rng) })!
    }

    /// A report with four links to three neighbours (one reached by LAN and Bluetooth), every figure
    /// filled in: the size a busy peer sends.
    static let fourLinks = PresenceReport(
        origin: peer(1), name: "gate-7", sequence: 1_795_000_000_000,
        links: [
            .init(peer: peer(2), kind: .lan, quality: LinkQuality(rttMilliseconds: 3, throughput: 11_000_000, isActive: true)),
            .init(peer: peer(2), kind: .bluetooth, quality: LinkQuality(rttMilliseconds: 45, throughput: 120_000)),
            .init(peer: peer(3), kind: .bluetooth, quality: LinkQuality(rttMilliseconds: 60, throughput: 90_000, isActive: true)),
            .init(peer: peer(4), kind: .cloud, quality: LinkQuality(rttMilliseconds: 180, throughput: 2_500_000, isActive: true)),
        ]
    )

    static func randomReport(_ rng: inout SeededRandom) -> PresenceReport {
        let origin = randomPeer(&rng)
        let neighbours = (0..<Int.random(in: 0...6, using: &rng)).map { _ in randomPeer(&rng) }
        var links: [PresenceReport.Neighbour] = []
        for neighbour in neighbours {
            for kind in LinkKind.allCases where Bool.random(using: &rng) {
                let quality = LinkQuality(
                    rttMilliseconds: Bool.random(using: &rng) ? UInt32.random(in: 0...UInt32.max, using: &rng) : nil,
                    throughput: Bool.random(using: &rng) ? UInt64.random(in: 0...UInt64.max, using: &rng) : nil,
                    isActive: Bool.random(using: &rng)
                )
                links.append(.init(peer: neighbour, kind: kind, quality: quality))
            }
        }
        links.shuffle(using: &rng)
        var metadata: [String: String] = [:]
        for _ in 0..<Int.random(in: 0...PresenceReport.Limits.metadataEntries, using: &rng) {
            metadata[randomText(&rng, upTo: 12)] = randomText(&rng, upTo: 20)
        }
        return PresenceReport(
            origin: origin, name: randomText(&rng, upTo: 20),
            sequence: UInt64.random(in: 0...UInt64.max, using: &rng), metadata: metadata, links: links
        )
    }

    private static func randomText(_ rng: inout SeededRandom, upTo length: Int) -> String {
        let letters = Array("abcxyz-_09 éü✓")
        return String((0..<Int.random(in: 0...length, using: &rng)).map { _ in letters.randomElement(using: &rng)! })
    }
}

/// A monotonic clock a test moves by hand.
final class ManualClock: Sendable {
    private let instant = Mutex(ContinuousClock.now)

    var now: ContinuousClock.Instant { instant.withLock { $0 } }

    func advance(by duration: Duration) { instant.withLock { $0 += duration } }

    /// The closure a tracker reads time from.
    var reader: @Sendable () -> ContinuousClock.Instant { { self.now } }
}
