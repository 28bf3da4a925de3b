/// A change in the state of a `NATSConnection`, reported in order on `NATSConnection.events`.
public enum NATSConnectionEvent: Sendable, Equatable {
    /// The link to the server is lost; the client reconnects on its own and buffers publishes.
    case disconnected
    /// Connected again (also reported when a connection started with `retryOnFailedConnect`
    /// reaches a server for the first time).
    case reconnected
    /// Closed for good, by `close()`; the last event.
    case closed
    /// An asynchronous error, such as a slow consumer or a permission violation.
    case error(String)
}
