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
        self.port = port
        self.descriptor = Mutex(try LoopbackAddress.listeningSocket(port: port, backlog: 1))
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
