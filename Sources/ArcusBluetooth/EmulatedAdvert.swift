import ArcusMesh
import Foundation

/// What a peer on the emulated radio advertises, as BLE service data would carry it: its id,
/// the hash of its mesh, where its channel listens, and when it last advertised. Written to
/// DIR/adverts/<peer id> every second; an advert older than `lifetime` is a peer gone quiet.
struct EmulatedAdvert: Sendable, Equatable, Codable {
    var peer: String
    var mesh: String
    var socket: String
    /// Seconds since 1970 when it was written.
    var time: Double

    static let interval: Duration = .seconds(1)
    static let lifetime: Double = 3
    /// An advert is a few hundred bytes; anything larger is not one.
    static let maximumFileBytes = 4_096

    var peerID: PeerID? { Hex.decode(peer).flatMap { PeerID(bytes: $0) } }

    func isFresh(now: Double) -> Bool { now - time <= Self.lifetime }

    static func read(_ path: String) -> EmulatedAdvert? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              let size = attributes[.size] as? Int, size <= maximumFileBytes,
              let data = FileManager.default.contents(atPath: path)
        else { return nil }
        return try? JSONDecoder().decode(EmulatedAdvert.self, from: data)
    }

    func write(to path: String) throws {
        try JSONEncoder().encode(self).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
