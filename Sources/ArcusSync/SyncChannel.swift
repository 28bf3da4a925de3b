/// What the sync engine talks to one peer through: an ordered, reliable, message-preserving
/// pipe that may close at any moment. Each message is one ArcusCodec frame. A mesh session (or,
/// in tests and the demo, a loopback link with fragmentation) provides it; the sync engine
/// knows no transport.
public protocol SyncChannel: AnyObject, Sendable {
    /// Sends one frame, suspending while the channel is saturated. Throws once it is closed.
    func send(_ frame: [UInt8]) async throws
    /// The frames the peer sent, in order; finishes when the channel closes.
    var incoming: AsyncStream<[UInt8]> { get }
    /// A frame size that goes through in one piece on the underlying link: attachment chunks
    /// are cut to it.
    var preferredFrameSize: Int { get }
    /// Closes both directions. Idempotent.
    func close()
    /// Waits until what was sent has been put on the underlying link, not necessarily received:
    /// true then, false at `deadline`. A channel that sends at once returns true.
    func flush(until deadline: ContinuousClock.Instant) async -> Bool
}

extension SyncChannel {
    public func flush(until deadline: ContinuousClock.Instant) async -> Bool { true }
}
