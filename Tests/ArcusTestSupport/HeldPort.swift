import Glibc
import Synchronization

/// A listening socket on 127.0.0.1 that keeps a port taken, for tests of what finds it busy.
///
/// It owns its descriptor and closes it once, however often it is released. A second close(2)
/// of the same number closes whatever opened that number in between: in a test process, another
/// test's NIO channel, and NIO then stops at an assertion when a new socket gets the number it
/// still has registered (CI, 2026-12-01: a `defer { close(fd) }` after an explicit `close(fd)`).
public final class HeldPort: Sendable {
    public let port: Int
    private let descriptor: Mutex<Int32?>

    /// Binds and listens on 127.0.0.1:`port`.
    public init(_ port: Int) throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw HeldPortError("socket", errno) }
        var address = LoopbackAddress.make(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(socket, 1) == 0 else {
            let error = HeldPortError("bind/listen on 127.0.0.1:\(port)", errno)
            close(socket)
            throw error
        }
        self.port = port
        self.descriptor = Mutex(socket)
    }

    /// The socket's descriptor while it is held.
    public var heldDescriptor: Int32? { descriptor.withLock { $0 } }

    /// Closes the socket, freeing the port; later calls do nothing.
    public func release() {
        descriptor.withLock { held in
            if let socket = held { close(socket) }
            held = nil
        }
    }

    deinit { release() }
}

public struct HeldPortError: Error, CustomStringConvertible {
    public let description: String

    init(_ operation: String, _ code: Int32) {
        description = "HeldPort: \(operation) failed: \(String(cString: strerror(code)))"
    }
}
