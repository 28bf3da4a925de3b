import ArcusMesh

/// Presence reports (`PresenceReport(decoding:)`): relayed by every peer, forged by anyone in
/// the mesh. A report that decodes is valid, and encodes and decodes to itself.
enum PresenceTarget {
    static let target = FuzzTarget(name: "presence", entryPoint: "ArcusMesh: PresenceReport(decoding:)", run: run, seeds: seeds)

    static func run(_ bytes: [UInt8]) {
        guard let report = try? PresenceReport(decoding: bytes) else { return }
        FuzzCheck.expect((try? report.validate()) != nil, "a decoded report fails its own validation: \(report)")
        FuzzCheck.expect((try? PresenceReport(decoding: report.encoded())) == report, "a report changed in a round trip: \(report)")
    }

    static func peer(_ n: UInt8) -> PeerID { PeerID(bytes: [UInt8](repeating: n, count: PeerID.size))! }

    static let fourLinks = PresenceReport(
        origin: peer(1), name: "gate-7", sequence: 1_795_000_000_000, metadata: ["role": "hub", "site": "north"],
        links: [
            .init(peer: peer(2), kind: .lan, quality: LinkQuality(rttMilliseconds: 3, throughput: 11_000_000, isActive: true)),
            .init(peer: peer(2), kind: .bluetooth, quality: LinkQuality(rttMilliseconds: 45, throughput: 120_000)),
            .init(peer: peer(3), kind: .bluetooth, quality: LinkQuality(rttMilliseconds: 60, throughput: 90_000, isActive: true)),
            .init(peer: peer(4), kind: .cloud, quality: LinkQuality(rttMilliseconds: 180, throughput: 2_500_000, isActive: true)),
        ]
    )

    static func seeds() -> [[UInt8]] {
        let lonely = PresenceReport(origin: peer(9), name: "", sequence: 0)
        var metadata: [String: String] = [:]
        for i in 0..<8 { metadata["key\(i)"] = String(repeating: "v", count: 64) }
        var links: [PresenceReport.Neighbour] = []
        for i in 0..<40 {
            let quality = LinkQuality(rttMilliseconds: UInt32(i), isActive: i % 2 == 0)
            links.append(PresenceReport.Neighbour(peer: peer(UInt8(i + 10)), kind: LinkKind.allCases[i % 4], quality: quality))
        }
        let busy = PresenceReport(origin: peer(200), name: String(repeating: "n", count: 64), sequence: .max, metadata: metadata, links: links)
        return [fourLinks, lonely, busy].map { $0.encoded() }
    }
}
