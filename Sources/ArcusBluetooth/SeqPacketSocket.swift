import CBlueZ
import Glibc
import Synchronization

/// A SOCK_SEQPACKET socket — an L2CAP channel (AF_BLUETOOTH, BTPROTO_L2CAP) or its emulation
/// (AF_UNIX) — that owns its descriptor and closes it once. Each method is one syscall, its
/// failure a typed error; L2CAP calls whose errno means "no Bluetooth here" throw
/// `BluetoothUnavailable` instead, which says what to do.
///
/// The owner must not close it while another thread is inside a call on it: `shutdown()` is the
/// way to wake such a call.
public final class SeqPacketSocket: Sendable, CustomStringConvertible {
    public enum Family: Sendable, Hashable {
        /// L2CAP channels, and the kernel's Bluetooth management socket (one packet per read and
        /// write too, so the same link code carries it).
        case l2cap, unix, management
    }

    public let descriptor: Int32
    public let family: Family
    private let closed = Mutex(false)

    private init(descriptor: Int32, family: Family) {
        self.descriptor = descriptor
        self.family = family
    }

    deinit { close() }

    public var description: String {
        switch family {
        case .l2cap: return "L2CAP seqpacket socket \(descriptor)"
        case .unix: return "AF_UNIX seqpacket socket \(descriptor)"
        case .management: return "Bluetooth management socket \(descriptor)"
        }
    }

    // MARK: Opening

    /// A new L2CAP socket for an LE credit-based channel.
    public static func l2cap() throws -> SeqPacketSocket {
        let fd = socket(AF_BLUETOOTH, socketType, BTPROTO_L2CAP)
        guard fd >= 0 else { throw l2capFailure(.last(.open)) }
        return SeqPacketSocket(descriptor: fd, family: .l2cap)
    }

    /// The kernel's Bluetooth management socket (BlueZ doc/mgmt-api.txt): a raw HCI socket bound
    /// to HCI_CHANNEL_CONTROL for no device. Needs CAP_NET_ADMIN.
    public static func management() throws -> SeqPacketSocket {
        let fd = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_HCI)
        guard fd >= 0 else { throw l2capFailure(.last(.open)) }
        let socket = SeqPacketSocket(descriptor: fd, family: .management)
        var address = sockaddr_hci()
        address.hci_family = sa_family_t(AF_BLUETOOTH)
        address.hci_dev = UInt16(HCI_DEV_NONE)
        address.hci_channel = UInt16(HCI_CHANNEL_CONTROL)
        try socket.call(.bind, with: address) { Glibc.bind($0, $1, $2) }
        return socket
    }

    /// A new AF_UNIX SOCK_SEQPACKET socket, as the emulated radio uses.
    public static func unix() throws -> SeqPacketSocket {
        let fd = socket(AF_UNIX, socketType, 0)
        guard fd >= 0 else { throw SocketError.last(.open) }
        return SeqPacketSocket(descriptor: fd, family: .unix)
    }

    /// Two AF_UNIX SOCK_SEQPACKET sockets connected to each other.
    public static func pair() throws -> (SeqPacketSocket, SeqPacketSocket) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, socketType, 0, &fds) == 0 else { throw SocketError.last(.socketPair) }
        return (SeqPacketSocket(descriptor: fds[0], family: .unix), SeqPacketSocket(descriptor: fds[1], family: .unix))
    }

    private static let socketType = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)

    /// The error an L2CAP call throws: the unavailability errno means, or the bare error.
    private static func l2capFailure(_ error: SocketError) -> any Error {
        BluetoothUnavailable(error) ?? error
    }

    private func failure(_ operation: SocketOperation) -> any Error {
        let error = SocketError.last(operation)
        return family == .unix ? error : Self.l2capFailure(error)
    }

    // MARK: Addresses

    public func bind(_ address: L2CAPAddress) throws {
        try call(.bind, with: address.sockaddr, Glibc.bind)
    }

    public func bind(_ path: UnixSocketPath) throws {
        try call(.bind, with: path.sockaddr, Glibc.bind)
    }

    public func connect(_ address: L2CAPAddress) throws {
        try call(.connect, with: address.sockaddr, Glibc.connect)
    }

    public func connect(_ path: UnixSocketPath) throws {
        try call(.connect, with: path.sockaddr, Glibc.connect)
    }

    /// Calls bind or connect with `address` (a sockaddr_l2 or sockaddr_un) seen as a sockaddr.
    private func call<Address>(
        _ operation: SocketOperation, with address: Address,
        _ syscall: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) throws {
        let result = withUnsafeBytes(of: address) { bytes in
            syscall(descriptor, bytes.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(bytes.count))
        }
        guard result == 0 else { throw failure(operation) }
    }

    /// The L2CAP address this socket is bound to; after binding PSM 0, the dynamic PSM the kernel
    /// chose (in `L2CAPAddress.dynamicPSMs`).
    public func boundL2CAPAddress() throws -> L2CAPAddress {
        try l2capAddress(getsockname, .getSockName)
    }

    /// The remote device's address and type of a connected L2CAP socket (its PSM is the remote
    /// end's source PSM, not where that device listens).
    public func remoteL2CAPAddress() throws -> L2CAPAddress {
        try l2capAddress(getpeername, .getPeerName)
    }

    /// getsockname(2) or getpeername(2), read as an L2CAP address.
    private func l2capAddress(
        _ call: (Int32, UnsafeMutablePointer<Glibc.sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32, _ operation: SocketOperation
    ) throws -> L2CAPAddress {
        var sockaddr = sockaddr_l2()
        var length = socklen_t(MemoryLayout<sockaddr_l2>.size)
        let result = withUnsafeMutablePointer(to: &sockaddr) {
            $0.withMemoryRebound(to: Glibc.sockaddr.self, capacity: 1) { call(descriptor, $0, &length) }
        }
        guard result == 0 else { throw failure(operation) }
        return L2CAPAddress(sockaddr)
    }

    /// Who is at the other end of an accepted socket, as `PendingHandshakes` counts sources: the
    /// remote device's address for an L2CAP channel ("AA:BB:CC:DD:EE:FF"), the connecting
    /// process for an emulated (AF_UNIX) one ("pid 4711"), or "unknown" when the kernel does not
    /// say (then every such link shares one source).
    public var remoteSource: String {
        switch family {
        case .l2cap:
            return (try? remoteL2CAPAddress().text) ?? "unknown"
        case .unix:
            // struct ucred (pid, uid, gid: three 32-bit fields), which Glibc's module does not
            // export without _GNU_SOURCE.
            var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
            var length = socklen_t(MemoryLayout.size(ofValue: credentials))
            guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else { return "unknown" }
            return "pid \(credentials.pid)"
        case .management:
            return "kernel"
        }
    }

    // MARK: Listening

    public func listen(backlog: Int32 = 128) throws {
        guard Glibc.listen(descriptor, backlog) == 0 else { throw failure(.listen) }
    }

    /// The next connection; blocks until one comes (or `shutdown()`), unless `poll` said one waits.
    public func accept() throws -> SeqPacketSocket {
        let fd = Glibc.accept(descriptor, nil, nil)
        guard fd >= 0 else { throw failure(.accept) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return SeqPacketSocket(descriptor: fd, family: family)
    }

    // MARK: Options

    /// The largest SDU this end accepts (BT_RCVMTU); set it before `connect` or `listen`.
    public func setReceiveMTU(_ mtu: UInt16) throws {
        var value = mtu
        guard setsockopt(descriptor, SOL_BLUETOOTH, BT_RCVMTU, &value, socklen_t(MemoryLayout<UInt16>.size)) == 0 else {
            throw failure(.setReceiveMTU)
        }
    }

    /// The largest SDU the peer accepts (BT_SNDMTU), known once connected: the link's MTU.
    public func sendMTU() throws -> Int {
        var value: UInt16 = 0
        var length = socklen_t(MemoryLayout<UInt16>.size)
        guard getsockopt(descriptor, SOL_BLUETOOTH, BT_SNDMTU, &value, &length) == 0 else { throw failure(.getSendMTU) }
        return Int(value)
    }

    /// The protection the link needs before data flows (BT_SECURITY); set it before connecting.
    public func setSecurity(_ level: BluetoothSecurityLevel) throws {
        var value = bt_security(level: level.kernelValue, key_size: 0)
        guard setsockopt(descriptor, SOL_BLUETOOTH, BT_SECURITY, &value, socklen_t(MemoryLayout<bt_security>.size)) == 0 else {
            throw failure(.setSecurity)
        }
    }

    /// Bounds the bytes queued towards the peer (SO_SNDBUF; the kernel doubles it for overhead).
    public func setSendBuffer(bytes: Int) throws {
        var value = Int32(clamping: bytes)
        guard setsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &value, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            throw failure(.setSendBuffer)
        }
    }

    /// How long a blocking send, or an L2CAP connect, waits (SO_SNDTIMEO); a connect that runs out
    /// fails with EINPROGRESS.
    public func setSendTimeout(_ timeout: Duration) throws {
        let (seconds, attoseconds) = timeout.components
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        guard setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
            throw failure(.setSendTimeout)
        }
    }

    /// Makes `accept` return EAGAIN instead of blocking, for a listener driven by poll().
    public func setNonBlocking() {
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
    }

    /// Waits up to `milliseconds` for a packet to read (or a hang-up); false on timeout.
    public func waitForReadable(milliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, milliseconds) > 0
    }

    // MARK: Data

    /// Sends `message` as one packet without blocking: false if the socket's buffer is full.
    public func sendWithoutBlocking(_ message: [UInt8]) throws -> Bool {
        let sent = message.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) }
        if sent >= 0 { return true }
        if Glibc.errno == EAGAIN || Glibc.errno == EWOULDBLOCK { return false }
        throw SocketError.last(.send)
    }

    /// What one non-blocking receive found.
    public enum Received: Sendable, Equatable {
        /// A packet of this many bytes; more than the buffer held if the packet was truncated.
        case packet(length: Int)
        /// Nothing queued.
        case wouldBlock
        /// A zero-length read: an empty packet or the peer's shutdown (see `peekIsEndOfStream`).
        case empty
    }

    /// Receives one packet into `buffer` without blocking. The length is the packet's real
    /// length (MSG_TRUNC), so a packet larger than the buffer is detected, never silently cut.
    public func receiveWithoutBlocking(into buffer: UnsafeMutableRawBufferPointer) throws -> Received {
        let length = recv(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT) | Int32(MSG_TRUNC))
        if length > 0 { return .packet(length: length) }
        if length == 0 { return .empty }
        if Glibc.errno == EAGAIN || Glibc.errno == EWOULDBLOCK { return .wouldBlock }
        throw SocketError.last(.receive)
    }

    /// After an `.empty` receive: true if the peer has shut down and nothing is queued, false if
    /// the empty read was an empty packet.
    public func peekIsEndOfStream() -> Bool {
        var byte: UInt8 = 0
        let length = recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT) | Int32(MSG_PEEK))
        return !(length < 0 && (Glibc.errno == EAGAIN || Glibc.errno == EWOULDBLOCK)) && length <= 0
    }

    // MARK: Ending

    /// Ends both directions, waking any call blocked on the socket; the descriptor stays open.
    public func shutdown() {
        closed.withLock { isClosed in
            if !isClosed { _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }
        }
    }

    /// Closes the descriptor, once.
    public func close() {
        closed.withLock { isClosed in
            if !isClosed {
                isClosed = true
                _ = Glibc.close(descriptor)
            }
        }
    }
}
