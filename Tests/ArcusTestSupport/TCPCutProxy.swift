import Foundation
import Glibc

/// A TCP forwarder on 127.0.0.1 that can cut every connection, like a device whose uplink goes
/// down: `cut()` closes the forwarded connections and refuses new ones (accepts and closes them
/// at once) until `restore()`.
public final class TCPCutProxy: @unchecked Sendable {
    // `isCut`, `isStopped`, `isListenerClosed` and `connections` are guarded by `lock`; the
    // rest is immutable. A descriptor is shut down only under the lock that records its close:
    // once closed, its number may be another socket's (another test's, in this process).

    public let port: Int
    public let targetPort: Int
    public var url: String { "nats://127.0.0.1:\(port)" }

    private let listener: Int32
    private let lock = NSLock()
    private var isCut = false
    private var isStopped = false
    private var isListenerClosed = false
    private var connections: [ObjectIdentifier: ForwardedConnection] = [:]

    public init(targetPort: Int) throws {
        let listener = try LoopbackAddress.listeningSocket(port: 0, backlog: 64, reuseAddress: true)
        guard let port = LoopbackAddress.localPort(of: listener) else {
            let error = LoopbackListenError(operation: "getsockname", port: 0, code: errno)
            close(listener)
            throw error
        }
        self.listener = listener
        self.port = port
        self.targetPort = targetPort
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    deinit {
        stop()
    }

    /// Closes every forwarded connection; from now on, closes new ones as soon as they arrive.
    public func cut() {
        let open = lock.withLock { () -> [ForwardedConnection] in
            isCut = true
            return Array(connections.values)
        }
        open.forEach { $0.shutDown() }
    }

    /// Forwards new connections again.
    public func restore() {
        lock.withLock { isCut = false }
    }

    /// Stops listening and closes every connection. Idempotent.
    public func stop() {
        let open = lock.withLock { () -> [ForwardedConnection]? in
            guard !isStopped else { return nil }
            isStopped = true
            return Array(connections.values)
        }
        guard let open else { return }
        // Wakes the accept loop, which closes the listener on its way out.
        lock.withLock { if !isListenerClosed { shutdown(listener, Int32(SHUT_RDWR)) } }
        open.forEach { $0.shutDown() }
    }

    private func acceptLoop() {
        defer {
            lock.withLock {
                isListenerClosed = true
                close(listener)
            }
        }
        while true {
            let client = accept(listener, nil, nil)
            let (stopped, cut) = lock.withLock { (isStopped, isCut) }
            if stopped {
                if client >= 0 { close(client) }
                return
            }
            guard client >= 0 else {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            if cut {
                close(client)
                continue
            }
            forward(client)
        }
    }

    private func forward(_ client: Int32) {
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard upstream >= 0 else {
            close(client)
            return
        }
        var address = LoopbackAddress.make(port: targetPort)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(client)
            close(upstream)
            return
        }
        let connection = ForwardedConnection(client: client, upstream: upstream) { [weak self] finished in
            _ = self?.lock.withLock { self?.connections.removeValue(forKey: ObjectIdentifier(finished)) }
        }
        let admitted = lock.withLock { () -> Bool in
            guard !isCut, !isStopped else { return false }
            connections[ObjectIdentifier(connection)] = connection
            return true
        }
        guard admitted else {
            connection.shutDown()
            connection.closeWithoutPumps()
            return
        }
        connection.startPumps()
    }
}

/// One client connection and its upstream twin, with a thread copying bytes each way.
/// Pumps never close sockets (a closed descriptor number could be reused by another socket
/// while the other pump still uses it); the last pump to finish closes both.
private final class ForwardedConnection: @unchecked Sendable {
    // `pumpsRunning` and `isClosed` are guarded by `lock`; the descriptors are immutable, and
    // shut down only under the lock, while `isClosed` says they are still this connection's.
    let client: Int32
    let upstream: Int32
    private let onFinish: @Sendable (ForwardedConnection) -> Void
    private let lock = NSLock()
    private var pumpsRunning = 0
    private var isClosed = false

    init(client: Int32, upstream: Int32, onFinish: @escaping @Sendable (ForwardedConnection) -> Void) {
        self.client = client
        self.upstream = upstream
        self.onFinish = onFinish
    }

    func startPumps() {
        lock.withLock { pumpsRunning = 2 }
        Thread.detachNewThread { [self] in pump(from: client, to: upstream) }
        Thread.detachNewThread { [self] in pump(from: upstream, to: client) }
    }

    /// Ends both directions at once; the pumps see it and finish.
    func shutDown() {
        lock.withLock {
            guard !isClosed else { return }
            shutdown(client, Int32(SHUT_RDWR))
            shutdown(upstream, Int32(SHUT_RDWR))
        }
    }

    func closeWithoutPumps() {
        lock.withLock {
            guard !isClosed else { return }
            isClosed = true
            close(client)
            close(upstream)
        }
    }

    private func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        copying: while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            var written = 0
            while written < count {
                let result = buffer.withUnsafeBytes { bytes -> Int in
                    guard let base = bytes.baseAddress else { return -1 }
                    return send(destination, base + written, count - written, Int32(MSG_NOSIGNAL))
                }
                if result < 0 && errno == EINTR { continue }
                guard result > 0 else { break copying }
                written += result
            }
        }
        shutDown()
        let isLast = lock.withLock { () -> Bool in
            pumpsRunning -= 1
            return pumpsRunning == 0
        }
        if isLast {
            closeWithoutPumps()
            onFinish(self)
        }
    }
}
