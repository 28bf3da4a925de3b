/// A message received on a subscription; a copy, independent of libnats' memory.
public struct NATSMessage: Sendable {
    public let subject: String
    /// The reply subject, for requests.
    public let reply: String?
    public let payload: [UInt8]
    /// The stream sequence, for messages delivered by a JetStream consumer; otherwise `nil`.
    public let streamSequence: UInt64?

    public init(subject: String, reply: String?, payload: [UInt8], streamSequence: UInt64? = nil) {
        self.subject = subject
        self.reply = reply
        self.payload = payload
        self.streamSequence = streamSequence
    }
}
