import ArcusMesh
import Foundation

/// Who hears whom on the emulated radio, from DIR/topology.json:
/// `{"hears": {"<peer id>": ["<peer id>", ...]}}`. Without the file everyone hears everyone; a
/// peer the file does not list hears everyone, so a file may constrain only some peers.
///
/// A sees B's adverts when A hears B; a link between them needs both to hear each other (a
/// connection is two-way radio), and ends when either stops hearing the other.
///
/// `"signal": {"<listener id>": {"<speaker id>": -61}}` (optional) is the RSSI, in dBm, at which
/// the listener hears the speaker's adverts, as a real adapter reports it with each advert; a
/// pair it does not name reports none.
public struct EmulatedTopology: Sendable, Equatable, Codable {
    public var hears: [String: [String]]
    public var signal: [String: [String: Int]]?

    public init(hears: [String: [String]] = [:], signal: [String: [String: Int]]? = nil) {
        self.hears = hears
        self.signal = signal
    }

    /// The RSSI `listener` hears `speaker` at, bounded as HCI reports it (−127 to +20 dBm).
    public func signal(_ listener: PeerID, _ speaker: PeerID) -> Int8? {
        guard let heard = signal?[listener.description],
              let dBm = heard.first(where: { $0.key.lowercased() == speaker.description })?.value else { return nil }
        return Int8(min(max(dBm, -127), 20))
    }

    public static let everyoneHearsEveryone = EmulatedTopology()

    /// Bounds what is read from the file, whoever wrote it.
    static let maximumFileBytes = 1 << 20

    public func hears(_ listener: PeerID, _ speaker: PeerID) -> Bool {
        guard let heard = hears[listener.description] else { return true }
        return heard.contains { $0.lowercased() == speaker.description }
    }

    public func inRange(_ a: PeerID, _ b: PeerID) -> Bool { hears(a, b) && hears(b, a) }

    /// The topology in `path`: everyone hears everyone if there is no file; the last good one
    /// (`previous`) if the file is malformed or oversized, since it may be mid-write.
    static func read(_ path: String, previous: EmulatedTopology) -> EmulatedTopology {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return .everyoneHearsEveryone }
        guard let size = attributes[.size] as? Int, size <= maximumFileBytes,
              let data = FileManager.default.contents(atPath: path),
              let topology = try? JSONDecoder().decode(EmulatedTopology.self, from: data)
        else { return previous }
        return topology
    }

    /// Writes the topology atomically (a temporary file renamed over the old one).
    public func write(to path: String) throws {
        let data = try JSONEncoder().encode(self)
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
