import ArcusMesh
import Foundation
import Glibc
import Synchronization

/// The thread that moves one SeqPacketLink's packets: one send() per message, one recv() per
/// SDU, non-blocking, waiting in poll() on the socket and a wakeup pipe. It runs off the
/// cooperative pool because the sockets are blocking-style I/O, and it is not SwiftNIO because a
/// NIO channel gathers pending writes into one writev, which on a SEQPACKET socket would merge
/// two messages into one packet.
///
/// Sends and receives are demand-driven: a send is a queued continuation, resumed once the
/// kernel (or, emulated, the paced radio) has taken the message; a receive is one continuation,
/// resumed with the next SDU. So the kernel's buffers are the link's only buffers, and a full
/// one suspends `send`.
final class SeqPacketIOLoop: Sendable {
    private struct PendingSend {
        let id: UInt64
        let message: [UInt8]
        let continuation: CheckedContinuation<Void, any Error>
        /// Being handed to the kernel right now: too late to cancel.
        var inFlight = false
    }

    private struct State {
        var closed = false
        var sends: [PendingSend] = []
        var nextID: UInt64 = 0
        var receiver: CheckedContinuation<[UInt8]?, Never>?
        var receiverCancelled = false
        var closeHandlers: [@Sendable () -> Void] = []
    }

    let socket: SeqPacketSocket
    let mtu: Int
    let phy: EmulatedPHY?
    private let wakeup: Wakeup
    private let state = Mutex(State())

    /// Whether a send the kernel refuses ends the link (a channel whose peer is gone) or fails
    /// only that send (the management socket, which refuses a command it will not take now).
    let refusedSendEndsLink: Bool

    init(socket: SeqPacketSocket, mtu: Int, phy: EmulatedPHY?, refusedSendEndsLink: Bool = true) throws {
        self.socket = socket
        self.mtu = mtu
        self.phy = phy
        self.refusedSendEndsLink = refusedSendEndsLink
        wakeup = try Wakeup()
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "arcus-seqpacket-\(socket.descriptor)"
        thread.start()
    }

    /// Runs `handler` once the link has closed, at once if it has.
    func onClose(_ handler: @escaping @Sendable () -> Void) {
        let closed = state.withLock { state in
            if !state.closed { state.closeHandlers.append(handler) }
            return state.closed
        }
        if closed { handler() }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    // MARK: Called from tasks

    func send(_ message: [UInt8]) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let refusal: (any Error)? = state.withLock { state in
                    if state.closed { return LinkError.closed }
                    if Task.isCancelled { return CancellationError() }
                    state.sends.append(PendingSend(id: id, message: message, continuation: continuation))
                    return nil
                }
                if let refusal { continuation.resume(throwing: refusal) } else { wakeup.signal() }
            }
        } onCancel: {
            let cancelled = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.sends.firstIndex(where: { $0.id == id && !$0.inFlight }) else { return nil }
                return state.sends.remove(at: index).continuation
            }
            cancelled?.resume(throwing: CancellationError())
        }
    }

    /// The next SDU, or nil once the link is closed or the consuming task is cancelled.
    func receive() async -> [UInt8]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[UInt8]?, Never>) in
                let finished = state.withLock { state in
                    if state.closed || state.receiverCancelled || Task.isCancelled { return true }
                    state.receiver = continuation
                    return false
                }
                if finished { continuation.resume(returning: nil) } else { wakeup.signal() }
            }
        } onCancel: {
            let receiver = state.withLock { state in
                state.receiverCancelled = true
                defer { state.receiver = nil }
                return state.receiver
            }
            receiver?.resume(returning: nil)
        }
    }

    func close() {
        let first = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        socket.shutdown()
        wakeup.signal()
    }

    // MARK: The thread

    private func run() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(mtu, 1), alignment: 16)
        defer { buffer.deallocate() }
        var pacing = Pacing(phy: phy, mtu: mtu)

        io: while true {
            wakeup.drain()
            if isClosed { break io }
            let now = MonotonicClock.now()
            var waitForWritable = false
            var waitForReadable = false
            var deadline: UInt64?
            do {
                // Paced SDUs whose time has come go to the kernel first, in order.
                waitForWritable = try !pacing.deliverDue(at: now, to: socket)
                deadline = pacing.nextDue

                // Then the queued sends, as far as the radio (or the kernel) takes them.
                while !waitForWritable, let (id, message) = takeHead() {
                    if phy != nil {
                        switch pacing.admit(id: id, size: message.count, at: now) {
                        case .later(let at):
                            deadline = min(deadline ?? at, at)
                            release(id)
                        case .full:
                            release(id)
                        case .now(let due):
                            pacing.enqueue(message, due: due)
                            deadline = min(deadline ?? due, due)
                            complete(id)
                            continue
                        }
                        break
                    }
                    let sent: Bool
                    do {
                        sent = try socket.sendWithoutBlocking(message)
                    } catch where !refusedSendEndsLink {
                        fail(id, error)
                        continue
                    }
                    guard sent else {
                        release(id)
                        waitForWritable = true
                        break
                    }
                    complete(id)
                }

                // Then one SDU for a waiting receiver.
                if state.withLock({ $0.receiver != nil }) {
                    switch try socket.receiveWithoutBlocking(into: buffer) {
                    case .packet(let length):
                        // Only a misbehaving peer sends over our MTU (L2CAP's kernel refuses it):
                        // end the link rather than deliver a cut message.
                        guard length <= mtu else { break io }
                        deliver(Array(buffer[0..<length]))
                        continue
                    case .empty:
                        if socket.peekIsEndOfStream() { break io }
                        deliver([])
                        continue
                    case .wouldBlock:
                        waitForReadable = true
                    }
                }
            } catch {
                break io  // a failed send or receive: the peer is gone
            }

            var descriptors = [
                pollfd(fd: wakeup.readEnd, events: Int16(POLLIN), revents: 0),
                // Always polled: POLLHUP and POLLERR tell a peer's hang-up even when idle.
                pollfd(fd: socket.descriptor, events: Int16((waitForReadable ? POLLIN : 0) | (waitForWritable ? POLLOUT : 0)), revents: 0),
            ]
            let timeout = deadline.map { Self.milliseconds(until: $0) } ?? -1
            if poll(&descriptors, nfds_t(descriptors.count), timeout) < 0 && errno != EINTR { break io }
            let hangUp = descriptors[1].revents & Int16(POLLHUP | POLLERR) != 0
            // A hang-up with a reader waiting is read to its end first; otherwise it ends the link.
            if hangUp && !waitForReadable && !waitForWritable { break io }
        }
        finish()
    }

    private static func milliseconds(until deadline: UInt64) -> Int32 {
        let now = MonotonicClock.now()
        guard deadline > now else { return 0 }
        return Int32(min((deadline - now + 999_999) / 1_000_000, 1_000))
    }

    private func takeHead() -> (UInt64, [UInt8])? {
        state.withLock { state in
            guard !state.closed, !state.sends.isEmpty else { return nil }
            state.sends[0].inFlight = true
            return (state.sends[0].id, state.sends[0].message)
        }
    }

    private func release(_ id: UInt64) {
        state.withLock { state in
            if let index = state.sends.firstIndex(where: { $0.id == id }) { state.sends[index].inFlight = false }
        }
    }

    private func fail(_ id: UInt64, _ error: any Error) {
        let continuation = state.withLock { state in
            state.sends.firstIndex(where: { $0.id == id }).map { state.sends.remove(at: $0).continuation }
        }
        continuation?.resume(throwing: error)
    }

    private func complete(_ id: UInt64) {
        let continuation = state.withLock { state in
            state.sends.firstIndex(where: { $0.id == id }).map { state.sends.remove(at: $0).continuation }
        }
        continuation?.resume()
    }

    private func deliver(_ message: [UInt8]) {
        let receiver = state.withLock { state in
            defer { state.receiver = nil }
            return state.receiver
        }
        receiver?.resume(returning: message)  // nil: the consumer was cancelled, the SDU is lost with it
    }

    /// Marks the link closed (before anyone hears of it, so a send after `incoming` finished
    /// throws), fails what waits, and releases the socket.
    private func finish() {
        let (sends, receiver, handlers) = state.withLock { state in
            state.closed = true
            defer {
                state.sends = []
                state.receiver = nil
                state.closeHandlers = []
            }
            return (state.sends, state.receiver, state.closeHandlers)
        }
        socket.shutdown()
        socket.close()
        for send in sends { send.continuation.resume(throwing: LinkError.closed) }
        receiver?.resume(returning: nil)
        for handler in handlers { handler() }
    }
}
