import Foundation
import Glibc
import Synchronization

/// Accepts connections on a listening SeqPacketSocket on a thread of its own, handing each to
/// `handler` (on that thread), until `close()`.
final class SeqPacketListener: Sendable {
    private let socket: SeqPacketSocket
    private let wakeup: Wakeup
    private let closed = Atomic(false)

    init(listening socket: SeqPacketSocket) throws {
        self.socket = socket
        wakeup = try Wakeup()
        socket.setNonBlocking()
    }

    func start(handler: @escaping @Sendable (SeqPacketSocket) -> Void) {
        let thread = Thread { [self] in
            while !closed.load(ordering: .acquiring) {
                var descriptors = [
                    pollfd(fd: wakeup.readEnd, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0),
                ]
                if poll(&descriptors, 2, -1) < 0 && errno != EINTR { break }
                wakeup.drain()
                if closed.load(ordering: .acquiring) { break }
                guard descriptors[1].revents & Int16(POLLIN) != 0 else { continue }
                // EAGAIN: the connection left before we took it. Other errors (EMFILE) are
                // transient for a listener: the next poll tries again.
                if let accepted = try? socket.accept() { handler(accepted) }
            }
            socket.close()
        }
        thread.name = "arcus-seqpacket-listener"
        thread.start()
    }

    func close() {
        closed.store(true, ordering: .releasing)
        wakeup.signal()
    }
}
