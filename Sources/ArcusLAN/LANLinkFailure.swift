/// Why a `LANLink` closed other than by `close()` or the peer's orderly close: what a log line
/// about a dropped LAN connection should say.
public enum LANLinkFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The peer announced a frame longer than links carry; nothing of it was buffered.
    case frameTooLong(length: Int, limit: Int)
    /// The connection ended inside a frame: `received` bytes of it (header included) had come,
    /// of a frame whose length is `length` if its header was whole.
    case truncatedFrame(received: Int, length: Int?)
    /// The dialler's first frame was not a `LANHello`, or did not come in time.
    case noHello(String)
    /// The socket failed (reset by the peer, timed out by keepalive).
    case connection(String)
    /// Too many connections from `source`, or from everywhere, were waiting for their hello or
    /// handshake (`PendingHandshakes`): this one was closed as it was accepted.
    case refused(source: String)

    public var description: String {
        switch self {
        case .frameTooLong(let length, let limit):
            return "the peer announced a frame of \(length) bytes; LAN links carry at most \(limit)"
        case .truncatedFrame(let received, let length):
            return "the connection ended inside a frame, after \(received) bytes" + (length.map { " of a \($0)-byte frame" } ?? "")
        case .noHello(let reason):
            return "the dialler did not introduce itself: \(reason)"
        case .connection(let reason):
            return "the connection failed: \(reason)"
        case .refused(let source):
            return "a connection from \(source) was closed as it was accepted: too many handshakes are pending"
        }
    }
}
