import Glibc

/// IPv4 loopback socket addresses, for the test fixtures that listen and dial on 127.0.0.1.
enum LoopbackAddress {
    static func make(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// Whether `call` (bind or connect) returns 0 on a fresh TCP socket given 127.0.0.1:`port`;
    /// the socket is closed after.
    static func succeeds(port: Int, _ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = make(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    /// A TCP socket listening on 127.0.0.1:`port` (0: a port the kernel picks), close-on-exec.
    static func listeningSocket(port: Int, backlog: Int32, reuseAddress: Bool = false) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw LoopbackListenError(operation: "socket", port: port, code: errno) }
        var yes: Int32 = 1
        if reuseAddress { setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size)) }
        var address = make(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(socket, backlog) == 0 else {
            let error = LoopbackListenError(operation: "bind/listen", port: port, code: errno)
            close(socket)
            throw error
        }
        return socket
    }

    static func localPort(of socket: Int32) -> Int? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard result == 0 else { return nil }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// A listening socket on 127.0.0.1 could not be made.
public struct LoopbackListenError: Error, CustomStringConvertible {
    let operation: String
    let port: Int
    let code: Int32
    public var description: String { "\(operation) on 127.0.0.1:\(port) failed: \(String(cString: strerror(code)))" }
}
