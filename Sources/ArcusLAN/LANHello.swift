import ArcusMesh

/// The first frame on every LAN connection, from the dialler: the port it listens on and the peer
/// id it advertises. TCP shows only the dialler's ephemeral port, so without it an accepted link
/// could not be matched to the endpoint the dialler is known by.
public struct LANHello: Sendable, Hashable {
    static let version: UInt8 = 1

    public var listeningPort: UInt16
    public var peer: PeerID?

    public init(listeningPort: UInt16, peer: PeerID?) {
        self.listeningPort = listeningPort
        self.peer = peer
    }

    /// Version, port (big-endian), then the peer id's bytes if it has one.
    public var encoded: [UInt8] {
        [Self.version, UInt8(listeningPort >> 8), UInt8(listeningPort & 0xFF)] + (peer?.bytes ?? [])
    }

    /// Reads a hello frame; throws `LANLinkFailure.noHello` saying what is wrong with it.
    public init(decoding frame: [UInt8]) throws(LANLinkFailure) {
        guard frame.first == Self.version else {
            throw .noHello("the first frame is not a version \(Self.version) hello")
        }
        guard frame.count == 3 || frame.count == 3 + PeerID.size else {
            throw .noHello("a hello of \(frame.count) bytes; it has 3, or 3 and a \(PeerID.size)-byte peer id")
        }
        listeningPort = UInt16(frame[1]) << 8 | UInt16(frame[2])
        peer = frame.count == 3 ? nil : PeerID(bytes: frame[3...])
    }
}
