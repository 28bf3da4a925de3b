import ArcusMesh

/// The NATS subjects of one mesh on a relay. Every subject starts with `arcus.<mesh hash>`, so
/// meshes sharing a relay never see each other's traffic, and a relay operator can grant a mesh
/// exactly `arcus.<hash>.>`.
///
/// - `arcus.<mesh>.presence`: announcements (`CloudAnnouncement`), core NATS, never stored.
/// - `arcus.<mesh>.link.<to>.<from>`: the frames of every link from peer `from` to peer `to`
///   (peer ids in hex), which the mesh's stream stores when store-and-forward is on.
struct CloudSubjects: Sendable, Hashable {
    let mesh: String

    /// `meshHash` must be a subject token: hex digits (MeshCredential.meshHash) are.
    init(meshHash: String) {
        mesh = meshHash.isEmpty ? "open" : meshHash
    }

    var presence: String { "arcus.\(mesh).presence" }

    /// Frames from `from` to `to`.
    func link(to: PeerID, from: PeerID) -> String { "arcus.\(mesh).link.\(to).\(from)" }

    /// Every frame addressed to `peer`, from anyone.
    func links(to peer: PeerID) -> String { "arcus.\(mesh).link.\(peer).*" }

    /// What the mesh's stream captures: every link frame, never presence.
    var allLinks: String { "arcus.\(mesh).link.>" }

    /// The JetStream stream of this mesh (stream names may not contain dots).
    var streamName: String { "ARCUS_\(mesh)" }

    /// The sender of a frame that arrived on `subject`, or nil if the subject is not a link
    /// subject of this mesh addressed to `peer`.
    func sender(of subject: String, addressedTo peer: PeerID) -> PeerID? {
        let prefix = "arcus.\(mesh).link.\(peer)."
        guard subject.hasPrefix(prefix) else { return nil }
        let token = subject.dropFirst(prefix.count)
        guard token.count == PeerID.size * 2, let bytes = Hex.decode(String(token)) else { return nil }
        return PeerID(bytes: bytes)
    }
}
