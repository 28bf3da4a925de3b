/// What one end of a link has moved so far, counted at the link's boundary: a message is sent
/// when `send` returns and received when the consumer of `incoming` takes it.
public struct LinkStatistics: Sendable, Hashable, CustomStringConvertible {
    public var messagesSent = 0
    public var bytesSent = 0
    public var messagesReceived = 0
    public var bytesReceived = 0

    public init() {}

    public var description: String {
        "sent \(messagesSent) messages (\(bytesSent) bytes), received \(messagesReceived) messages (\(bytesReceived) bytes)"
    }
}
