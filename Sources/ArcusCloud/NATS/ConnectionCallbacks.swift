import CNATS
import Synchronization

/// The Swift end of a connection's C callbacks: it turns them into `NATSConnectionEvent`s.
///
/// libnats holds it through an `Unmanaged` pointer, retained when the connection is made and
/// released by the closed callback, the last one libnats makes for a connection. When a connect
/// fails outright, the reference is kept (a few bytes) rather than risk a late callback.
final class ConnectionCallbacks: Sendable {
    let events: AsyncStream<NATSConnectionEvent>
    private let continuation: AsyncStream<NATSConnectionEvent>.Continuation
    private let closed = Mutex(false)

    init() {
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    /// True once libnats reported the connection closed; no callback follows.
    var hasClosed: Bool { closed.withLock { $0 } }

    func report(_ event: NATSConnectionEvent) {
        continuation.yield(event)
    }

    func reportClosed() {
        continuation.yield(.closed)
        continuation.finish()
        closed.withLock { $0 = true }
    }

    /// Registers every connection callback on `options`, each with this object as its closure.
    func install(on options: OpaquePointer, retryOnFailedConnect: Bool) throws(NATSError) {
        let closure = Unmanaged.passUnretained(self).toOpaque()
        try check(natsOptions_SetDisconnectedCB(options, natsDisconnectedCallback, closure), "setting the disconnected callback")
        try check(natsOptions_SetReconnectedCB(options, natsReconnectedCallback, closure), "setting the reconnected callback")
        try check(natsOptions_SetClosedCB(options, natsClosedCallback, closure), "setting the closed callback")
        try check(natsOptions_SetErrorHandler(options, natsErrorCallback, closure), "setting the error handler")
        try check(
            natsOptions_SetRetryOnFailedConnect(options, retryOnFailedConnect, retryOnFailedConnect ? natsReconnectedCallback : nil, closure),
            "setting retry on failed connect"
        )
    }
}

private func callbacks(_ closure: UnsafeMutableRawPointer?) -> ConnectionCallbacks? {
    closure.map { Unmanaged<ConnectionCallbacks>.fromOpaque($0).takeUnretainedValue() }
}

private let natsDisconnectedCallback: natsConnectionHandler = { _, closure in
    callbacks(closure)?.report(.disconnected)
}

private let natsReconnectedCallback: natsConnectionHandler = { _, closure in
    callbacks(closure)?.report(.reconnected)
}

private let natsClosedCallback: natsConnectionHandler = { _, closure in
    guard let closure else { return }
    let unmanaged = Unmanaged<ConnectionCallbacks>.fromOpaque(closure)
    unmanaged.takeUnretainedValue().reportClosed()
    unmanaged.release()
}

private let natsErrorCallback: natsErrHandler = { _, subscription, status, closure in
    let text = natsStatus_GetText(status).map { String(cString: $0) } ?? "status \(status.rawValue)"
    var subject = ""
    if let subscription, let name = natsSubscription_GetSubject(subscription) {
        subject = " on subscription \(String(cString: name))"
    }
    callbacks(closure)?.report(.error(text + subject))
}
