import CNATS
import Synchronization

/// A live subscription. `cancel()` ends it; closing its connection ends it too.
public final class NATSSubscription: Sendable {
    public let subject: String
    private let delivery: MessageDelivery
    /// The libnats subscription; `nil` once destroyed.
    private let handle: Mutex<OpaquePointer?>
    /// Called once when this subscription ends, so that its connection forgets it, with the
    /// unsubscribed handle for the connection to destroy when that is safe.
    private let onEnd: @Sendable (NATSSubscription, SendableHandle) -> Void

    init(
        subject: String,
        handle: sending OpaquePointer,
        delivery: MessageDelivery,
        onEnd: @escaping @Sendable (NATSSubscription, SendableHandle) -> Void
    ) {
        self.subject = subject
        self.handle = Mutex(handle)
        self.delivery = delivery
        self.onEnd = onEnd
    }

    /// Idempotent. When it returns, the handler is not running and never runs again (when
    /// called from the handler itself: once the handler returns). Messages in flight are dropped.
    public func cancel() {
        delivery.stop()
        guard let sub = handle.withLock({ handle -> OpaquePointer? in defer { handle = nil }; return handle }) else {
            return
        }
        // Unsubscribing closes the subscription: libnats then calls the on-complete callback,
        // which releases `delivery`. It fails only when the connection is already closed, which
        // closed the subscription already. The connection destroys the handle (see
        // NATSConnection.State.retired).
        _ = natsSubscription_Unsubscribe(sub)
        onEnd(self, SendableHandle(pointer: sub))
    }

    /// Called by the connection's `close()`, after the connection was closed: stops deliveries
    /// and destroys the handle without telling the connection.
    func invalidate() {
        delivery.stop()
        if let sub = handle.withLock({ handle -> OpaquePointer? in defer { handle = nil }; return handle }) {
            natsSubscription_Destroy(sub)
        }
    }

    /// Stops deliveries only; the connection destroys the handle once it is closed.
    func stopDeliveries() {
        delivery.stop()
    }

    deinit {
        // Reached only after cancel() or the connection's close(), which hold the last references
        // otherwise; kept as a safety net.
        if let sub = handle.withLock({ $0 }) {
            _ = natsSubscription_Unsubscribe(sub)
            natsSubscription_Destroy(sub)
        }
    }
}
