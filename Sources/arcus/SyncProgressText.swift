import Foundation

/// A subscription's sync progress as `GET /v1/subscriptions` and `GET /v1/status` give it
/// (snake_case keys, decoded with `.convertFromSnakeCase`), and how the CLI words it.
struct SubscriptionProgress: Decodable {
    struct Peer: Decodable {
        var peer: String
        var label: String
        var caughtUp: Bool
        var documentsReceived: Int
        var bytesReceived: Int
        var documentsToGo: Int?
        var bytesToGo: Int?
        var fraction: Double?
    }
    var id: Int
    var query: String
    var sync: [Peer]?
    var caughtUp: Bool?

    /// One peer's part: "caught up: 2,100 documents, 1.3 MB" or "1,200 documents, 800 kB
    /// received, about 900 documents, 600 kB to go (57%)".
    static func describe(_ peer: Peer) -> String {
        let received = "\(Self.documents(peer.documentsReceived)), \(StatusSummary.bytes(peer.bytesReceived))"
        if peer.caughtUp { return "caught up: \(received) received" }
        guard let documents = peer.documentsToGo, let bytes = peer.bytesToGo else {
            return "\(received) received, waiting for the peer to say what is left"
        }
        let percent = peer.fraction.map { " (\(Int(($0 * 100).rounded(.down)))%)" } ?? ""
        return "\(received) received, about \(Self.documents(documents)), \(StatusSummary.bytes(bytes)) to go\(percent)"
    }

    /// "1 document", "20,000 documents".
    static func documents(_ count: Int) -> String {
        "\(StatusSummary.number(count)) document\(count == 1 ? "" : "s")"
    }

    /// All peers together, for one line of `arcus subscribe --wait`.
    var summary: String {
        let peers = sync ?? []
        guard !peers.isEmpty else { return "#\(id): waiting for a peer to connect" }
        if peers.count == 1 { return "#\(id) from \(peers[0].label): " + Self.describe(peers[0]) }
        let caught = peers.filter(\.caughtUp).count
        let documents = peers.reduce(0) { $0 + $1.documentsReceived }, bytes = peers.reduce(0) { $0 + $1.bytesReceived }
        let syncing = peers.filter { !$0.caughtUp }
        var text = "#\(id): \(caught) of \(peers.count) peers caught up; \(StatusSummary.number(documents)) documents, \(StatusSummary.bytes(bytes)) received"
        if !syncing.isEmpty, syncing.allSatisfy({ $0.documentsToGo != nil }) {
            let left = syncing.reduce(0) { $0 + ($1.documentsToGo ?? 0) }, leftBytes = syncing.reduce(0) { $0 + ($1.bytesToGo ?? 0) }
            text += ", about \(StatusSummary.number(left)) documents, \(StatusSummary.bytes(leftBytes)) to go"
        }
        return text
    }
}
