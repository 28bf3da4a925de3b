import Glibc

/// A socket syscall that failed: which one, and the errno it left.
public struct SocketError: Error, Sendable, Hashable, CustomStringConvertible {
    public let operation: SocketOperation
    public let errno: Int32

    public init(_ operation: SocketOperation, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    /// The failure of `operation` that the last syscall left in errno.
    static func last(_ operation: SocketOperation) -> SocketError {
        SocketError(operation, errno: Glibc.errno)
    }

    public var description: String {
        "\(operation.rawValue) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// The syscalls a `SeqPacketSocket` makes, named as in errors.
public enum SocketOperation: String, Sendable, Hashable {
    case open = "socket()"
    case socketPair = "socketpair()"
    case bind = "bind()"
    case listen = "listen()"
    case accept = "accept()"
    case connect = "connect()"
    case getSockName = "getsockname()"
    case getPeerName = "getpeername()"
    case setReceiveMTU = "setsockopt(BT_RCVMTU)"
    case setSecurity = "setsockopt(BT_SECURITY)"
    case getSendMTU = "getsockopt(BT_SNDMTU)"
    case setSendBuffer = "setsockopt(SO_SNDBUF)"
    case setSendTimeout = "setsockopt(SO_SNDTIMEO)"
    case send = "send()"
    case receive = "recv()"
    case poll = "poll()"
}
