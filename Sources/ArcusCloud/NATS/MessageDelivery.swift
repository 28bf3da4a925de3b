import CNATS
import Glibc
import Synchronization

/// The Swift end of one subscription's C callbacks: it copies each libnats message into a
/// `NATSMessage`, calls the handler, and lets `stop()` wait out a handler that is running.
///
/// libnats holds it through an `Unmanaged` pointer, retained when the subscription is made and
/// released by the subscription's on-complete callback, which libnats calls once, after the last
/// message callback, when the subscription is closed (unsubscribed, or its connection closed).
final class MessageDelivery: Sendable {
    private struct State {
        var stopped = false
        /// The thread running the handler right now, so that `stop()` can wait for it (or not,
        /// when the handler itself stops its own subscription).
        var runningOn: pthread_t?
        /// The highest stream sequence delivered, for JetStream subscriptions: a consumer that
        /// libnats recreates after a reconnect may send again what was already delivered.
        var lastStreamSequence: UInt64 = 0
    }

    private let handler: @Sendable (NATSMessage) -> Void
    private let deduplicatesByStreamSequence: Bool
    private let state = Mutex(State())

    init(deduplicatesByStreamSequence: Bool, handler: @escaping @Sendable (NATSMessage) -> Void) {
        self.handler = handler
        self.deduplicatesByStreamSequence = deduplicatesByStreamSequence
    }

    /// Called on the subscription's libnats delivery thread; always destroys `message`.
    func deliver(_ message: OpaquePointer) {
        defer { natsMsg_Destroy(message) }
        let streamSequence = deduplicatesByStreamSequence ? Self.streamSequence(of: message) : nil
        let proceed = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            if let streamSequence {
                guard streamSequence > state.lastStreamSequence else { return false }
                state.lastStreamSequence = streamSequence
            }
            state.runningOn = pthread_self()
            return true
        }
        guard proceed else { return }
        handler(Self.copy(message, streamSequence: streamSequence))
        state.withLock { $0.runningOn = nil }
    }

    /// After it returns, the handler is not running and never runs again, except when called
    /// from inside the handler: then the handler's current call finishes, and no other starts.
    func stop() {
        let me = pthread_self()
        while true {
            let running = state.withLock { state -> pthread_t? in
                state.stopped = true
                return state.runningOn
            }
            guard let running, pthread_equal(running, me) == 0 else { return }
            usleep(200)
        }
    }

    private static func copy(_ message: OpaquePointer, streamSequence: UInt64?) -> NATSMessage {
        let subject = natsMsg_GetSubject(message).map { String(cString: $0) } ?? ""
        let reply = natsMsg_GetReply(message).map { String(cString: $0) }
        let length = Int(max(natsMsg_GetDataLength(message), 0))
        var payload: [UInt8] = []
        if length > 0, let data = natsMsg_GetData(message) {
            payload = data.withMemoryRebound(to: UInt8.self, capacity: length) {
                Array(UnsafeBufferPointer(start: $0, count: length))
            }
        }
        return NATSMessage(subject: subject, reply: reply, payload: payload, streamSequence: streamSequence)
    }

    private static func streamSequence(of message: OpaquePointer) -> UInt64? {
        var metadata: UnsafeMutablePointer<jsMsgMetaData>?
        guard natsMsg_GetMetaData(&metadata, message) == NATS_OK, let metadata else { return nil }
        defer { jsMsgMetaData_Destroy(metadata) }
        return metadata.pointee.Sequence.Stream
    }
}

/// libnats' message callback: `closure` is the subscription's `MessageDelivery`.
let natsMessageCallback: natsMsgHandler = { _, _, message, closure in
    guard let message else { return }
    guard let closure else {
        natsMsg_Destroy(message)
        return
    }
    Unmanaged<MessageDelivery>.fromOpaque(closure).takeUnretainedValue().deliver(message)
}

/// libnats' on-complete callback: the last call for a subscription, so it gives back the
/// reference that the subscription held on its `MessageDelivery`.
let natsSubscriptionCompleteCallback: natsOnCompleteCB = { closure in
    guard let closure else { return }
    Unmanaged<MessageDelivery>.fromOpaque(closure).release()
}
