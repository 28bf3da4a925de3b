import CNATS
import Glibc
import Synchronization

/// A connection to NATS that reconnects on its own, forever, and buffers publishes meanwhile.
///
/// Owns every libnats handle it creates (options, connection, JetStream context, subscriptions)
/// and the callbacks it gives them; `close()` (or the last reference going away) destroys them.
/// Every method may be called from any thread, except `close()` from a message handler.
public final class NATSConnection: Sendable {
    struct State: ~Copyable {
        var connection: OpaquePointer?
        var options: OpaquePointer?
        var jetStream: SendableHandle?
        var subscriptions: [ObjectIdentifier: NATSSubscription] = [:]
        /// Calls into libnats running now with `connection`; `close()` waits for them to end
        /// before it destroys the handles.
        var callsInFlight = 0
        var closing = false
        var destroyed = false
        /// Cancelled subscriptions, unsubscribed but not yet destroyed: libnats 3.4's read loop
        /// may still hold one it looked up just before (nats.c issue 637, fixed in 3.6), so they
        /// are destroyed only once `natsConnection_Close` has joined that thread.
        var retired: [SendableHandle] = []
        var readLoopJoined = false
    }

    /// The URLs as given, for error messages (credentials removed).
    let serverDescription: String
    private let callbacks: ConnectionCallbacks
    let state: Mutex<State>

    /// Connection state changes, in order, for one consumer; finishes after `close()`.
    public var events: AsyncStream<NATSConnectionEvent> { callbacks.events }

    /// Connects with every option applied. With `retryOnFailedConnect`, returns even when no
    /// server answers yet; otherwise throws an error naming the URL and what to check.
    public init(_ options: NATSOptions) throws(NATSError) {
        serverDescription = options.urls.map(Self.withoutCredentials).joined(separator: ", ")
        guard !options.urls.isEmpty else {
            throw NATSError(
                operation: "connecting to NATS", detail: "no server URL given",
                hint: "give at least one URL, such as nats://127.0.0.1:4222 (--cloud, or cloud in the configuration file)")
        }
        var created: OpaquePointer?
        try check(natsOptions_Create(&created), "creating NATS options")
        guard let natsOptions = created else {
            throw NATSError(operation: "creating NATS options", detail: "libnats returned no options")
        }
        let callbacks = ConnectionCallbacks()
        do throws(NATSError) {
            try Self.apply(options, to: natsOptions)
            try callbacks.install(on: natsOptions, retryOnFailedConnect: options.retryOnFailedConnect)
        } catch {
            natsOptions_Destroy(natsOptions)
            throw error
        }
        // The reference that libnats' closed callback gives back (see ConnectionCallbacks).
        _ = Unmanaged.passRetained(callbacks)
        var connection: OpaquePointer?
        let status = natsConnection_Connect(&connection, natsOptions)
        let pending = status == NATS_NOT_YET_CONNECTED && options.retryOnFailedConnect
        guard status == NATS_OK || pending, let connection else {
            let error = NATSError(status, while: "connecting to \(serverDescription)")
            natsOptions_Destroy(natsOptions)
            throw error
        }
        self.callbacks = callbacks
        self.state = Mutex(State(connection: connection, options: natsOptions))
    }

    deinit {
        close()
    }

    /// True while connected to a server (not while connecting, reconnecting, or closed).
    public var isConnected: Bool {
        (try? withConnection("reading the connection status") { natsConnection_Status($0) == NATS_CONN_STATUS_CONNECTED }) ?? false
    }

    /// The last error the client met, such as why it cannot connect ("Authorization Violation"),
    /// or nil when there was none.
    public var lastError: String? {
        try? withConnection("reading the last error") { connection in
            var text: UnsafePointer<CChar>?
            let status = natsConnection_GetLastError(connection, &text)
            guard status != NATS_OK, let text else { return nil }
            return String(cString: text)
        }
    }

    /// Publishes `payload` on `subject`. While reconnecting, the message is buffered (up to
    /// `reconnectBufferBytes`) and sent once connected again.
    public func publish(_ subject: String, _ payload: [UInt8]) throws(NATSError) {
        try NATSSubject.validate(subject, allowsWildcards: false, while: "publishing on \(subject)")
        guard payload.count <= Int(Int32.max) else {
            throw NATSError(operation: "publishing on \(subject)", detail: "payload of \(payload.count) bytes is too large")
        }
        try withConnection("publishing on \(subject)") { connection throws(NATSError) in
            let status = payload.withUnsafeBytes { bytes in
                natsConnection_Publish(connection, subject, bytes.baseAddress, Int32(bytes.count))
            }
            try check(status, "publishing \(payload.count) bytes on \(subject) to \(serverDescription)")
        }
    }

    /// Subscribes to `subject` (wildcards allowed). `handler` runs on a libnats delivery thread,
    /// one message at a time for this subscription, in order; it must not block. The
    /// subscription lives until `cancel()` or `close()`, even if its object is dropped.
    public func subscribe(
        _ subject: String,
        _ handler: @escaping @Sendable (NATSMessage) -> Void
    ) throws(NATSError) -> NATSSubscription {
        try NATSSubject.validate(subject, allowsWildcards: true, while: "subscribing to \(subject)")
        let delivery = MessageDelivery(deduplicatesByStreamSequence: false, handler: handler)
        return try makeSubscription(subject, delivery: delivery, operation: "subscribing to \(subject)") {
            connection, closure throws(NATSError) -> OpaquePointer? in
            var sub: OpaquePointer?
            try check(natsConnection_Subscribe(&sub, connection, subject, natsMessageCallback, closure), "subscribing to \(subject)")
            return sub
        }
    }

    /// Sends everything buffered and waits for the server to answer, up to `within`.
    public func flush(within timeout: Duration) throws(NATSError) {
        try withConnection("flushing") { connection throws(NATSError) in
            try check(natsConnection_FlushTimeout(connection, max(timeout.natsMilliseconds, 1)), "flushing to \(serverDescription)")
        }
    }

    /// Closes the connection. Idempotent. When it returns, no handler runs again and every
    /// libnats handle is destroyed; `events` reports `.closed` and finishes.
    public func close() {
        let (subscriptions, connection, isFirstClose) = state.withLock { state in
            let isFirst = !state.closing
            state.closing = true
            return (Array(state.subscriptions.values), state.connection, isFirst)
        }
        guard isFirstClose, let connection else {
            waitUntil { state.withLock { $0.destroyed } }
            return
        }
        for subscription in subscriptions {
            subscription.stopDeliveries()
        }
        // Closing wakes calls blocked in libnats (flush, JetStream requests) with an error.
        natsConnection_Close(connection)
        // The read loop is joined: handles of cancelled subscriptions can go now.
        let retired = state.withLock { state in
            defer { state.retired = []; state.readLoopJoined = true }
            return state.retired
        }
        for handle in retired { natsSubscription_Destroy(handle.pointer) }
        waitUntil { state.withLock { $0.callsInFlight == 0 } }
        // The closed callback comes from libnats' callback thread; wait for it so that no
        // callback can outlive this object's handles.
        waitUntil(atMost: .seconds(10)) { callbacks.hasClosed }
        for subscription in subscriptions {
            subscription.invalidate()
        }
        let (jetStream, options) = state.withLock { state in
            defer {
                state.jetStream = nil
                state.options = nil
                state.connection = nil
                state.subscriptions = [:]
            }
            return (state.jetStream, state.options)
        }
        if let jetStream { jsCtx_Destroy(jetStream.pointer) }
        natsConnection_Destroy(connection)
        if let options { natsOptions_Destroy(options) }
        state.withLock { $0.destroyed = true }
    }

    // MARK: - Internals shared with the JetStream extension

    /// Runs `body` with the connection handle, which stays valid until `body` returns.
    func withConnection<T>(
        _ operation: @autoclosure () -> String,
        _ body: (OpaquePointer) throws(NATSError) -> T
    ) throws(NATSError) -> T {
        guard let connection = state.withLock({ state -> OpaquePointer? in
            guard !state.closing, let connection = state.connection else { return nil }
            state.callsInFlight += 1
            return connection
        }) else {
            throw NATSError(
                operation: operation(), statusCode: NATS_CONNECTION_CLOSED.rawValue,
                detail: "the connection is closed", hint: "create a new NATSConnection")
        }
        defer { state.withLock { $0.callsInFlight -= 1 } }
        return try body(connection)
    }

    /// Makes a subscription with `subscribe`, which receives the connection and the C closure
    /// for `delivery`, and registers it so that `close()` ends it.
    func makeSubscription(
        _ subject: String,
        delivery: MessageDelivery,
        operation: @autoclosure () -> String,
        _ subscribe: (OpaquePointer, UnsafeMutableRawPointer) throws(NATSError) -> OpaquePointer?
    ) throws(NATSError) -> NATSSubscription {
        let operationText = operation()
        return try withConnection(operationText) { connection throws(NATSError) in
            // Retained for libnats; given back by the on-complete callback.
            let closure = Unmanaged.passRetained(delivery).toOpaque()
            let handle: OpaquePointer?
            do throws(NATSError) {
                handle = try subscribe(connection, closure)
            } catch {
                // No subscription exists, so libnats never calls back with this closure.
                Unmanaged<MessageDelivery>.fromOpaque(closure).release()
                throw error
            }
            guard let handle else {
                Unmanaged<MessageDelivery>.fromOpaque(closure).release()
                throw NATSError(operation: operationText, detail: "libnats returned no subscription")
            }
            if natsSubscription_SetOnCompleteCB(handle, natsSubscriptionCompleteCallback, closure) != NATS_OK {
                // Already closed (the connection closed meanwhile): libnats will not call the
                // on-complete callback, and a message callback may have run; keep `delivery`.
                _ = natsSubscription_Unsubscribe(handle)
                natsSubscription_Destroy(handle)
                throw NATSError(NATS_CONNECTION_CLOSED, while: operationText)
            }
            // libnats handles are thread-safe; the subscription owns this one from here on.
            nonisolated(unsafe) let owned = handle
            let subscription = NATSSubscription(subject: subject, handle: owned, delivery: delivery) { [weak self] ended, handle in
                let destroyNow = self?.state.withLock { state -> Bool in
                    state.subscriptions.removeValue(forKey: ObjectIdentifier(ended))
                    guard !state.readLoopJoined else { return true }
                    state.retired.append(handle)
                    return false
                } ?? true
                if destroyNow { natsSubscription_Destroy(handle.pointer) }
            }
            state.withLock { $0.subscriptions[ObjectIdentifier(subscription)] = subscription }
            return subscription
        }
    }

    private static func apply(_ options: NATSOptions, to natsOptions: OpaquePointer) throws(NATSError) {
        let servers = options.urls.map { strdup($0) }
        defer { servers.forEach { free($0) } }
        var serverPointers = servers.map { UnsafePointer<CChar>($0) }
        try check(
            natsOptions_SetServers(natsOptions, &serverPointers, Int32(serverPointers.count)),
            "setting the server URLs \(options.urls.map(withoutCredentials).joined(separator: ", "))",
            hint: "URLs look like nats://host:4222, tls://host:4222 or nats://user:password@host:4222")
        try check(natsOptions_SetName(natsOptions, options.name), "setting the client name")
        if options.user != nil || options.password != nil {
            try check(natsOptions_SetUserInfo(natsOptions, options.user, options.password), "setting the user and password")
        }
        if let token = options.token {
            try check(natsOptions_SetToken(natsOptions, token), "setting the token")
        }
        if let credentialsFile = options.credentialsFile {
            try check(
                natsOptions_SetUserCredentialsFromFiles(natsOptions, credentialsFile, nil),
                "using the credentials file \(credentialsFile)",
                hint: "the file must be a NATS .creds file (user JWT and NKey seed) that this process can read")
        }
        if let tls = options.tls {
            try applyTLS(tls, to: natsOptions)
        }
        try check(natsOptions_SetAllowReconnect(natsOptions, true), "allowing reconnects")
        try check(natsOptions_SetMaxReconnect(natsOptions, -1), "setting unlimited reconnects")
        try check(natsOptions_SetReconnectWait(natsOptions, options.reconnectWait.natsMilliseconds), "setting the reconnect wait")
        try check(natsOptions_SetTimeout(natsOptions, max(options.connectTimeout.natsMilliseconds, 1)), "setting the connect timeout")
        try check(natsOptions_SetPingInterval(natsOptions, max(options.pingInterval.natsMilliseconds, 1)), "setting the ping interval")
        try check(natsOptions_SetMaxPingsOut(natsOptions, Int32(clamping: max(options.maxPingsOut, 1))), "setting the maximum pings out")
        try check(
            natsOptions_SetReconnectBufSize(natsOptions, Int32(clamping: max(options.reconnectBufferBytes, 0))),
            "setting the reconnect buffer size")
    }

    private static func applyTLS(_ tls: NATSTLS, to natsOptions: OpaquePointer) throws(NATSError) {
        try check(
            natsOptions_SetSecure(natsOptions, true), "enabling TLS",
            hint: "this libnats was built without TLS support")
        if let caFile = tls.caFile {
            try check(
                natsOptions_LoadCATrustedCertificates(natsOptions, caFile), "loading the CA certificate \(caFile)",
                hint: "the file must be a readable PEM certificate (cloud_ca_file)")
        }
        switch (tls.certificateFile, tls.keyFile) {
        case let (certificate?, key?):
            try check(
                natsOptions_LoadCertificatesChain(natsOptions, certificate, key),
                "loading the client certificate \(certificate) and key \(key)",
                hint: "both must be readable PEM files, the key matching the certificate")
        case (nil, nil):
            break
        default:
            throw NATSError(
                operation: "configuring TLS", detail: "a client certificate needs both certificateFile and keyFile",
                hint: "set both, or neither")
        }
    }

    /// `nats://user:secret@host` → `nats://host` (and `nats://token@host` likewise), so that
    /// errors, logs and reports carry no secrets. Text that is not quite a URL loses everything
    /// up to its last `@` too: it is shown when it failed to parse, and may still hold a password.
    public static func withoutCredentials(_ url: String) -> String {
        let characters = Array(url)
        guard let at = characters.lastIndex(of: "@") else { return url }
        if let colon = characters.firstIndex(of: ":"), characters[colon...].starts(with: "://"), at > colon {
            return String(characters[..<(colon + 3)]) + String(characters[(at + 1)...])
        }
        return String(characters[(at + 1)...])
    }
}

/// Polls `condition` until it holds, or until `limit` passes. Used only while closing, where
/// the awaited events (a callback returning, libnats' closed callback) come within milliseconds.
func waitUntil(atMost limit: Duration? = nil, _ condition: () -> Bool) {
    let clock = ContinuousClock()
    let deadline = limit.map { clock.now + $0 }
    while !condition() {
        if let deadline, clock.now >= deadline { return }
        usleep(500)
    }
}
