import Synchronization

/// The receiving half of a link that carries a handshake and then a secure session: it owns the
/// link's `incoming` iterator, so the handshake and the session after it read one stream, frame
/// by frame, and never read ahead (a slow consumer still slows the sender through the link).
actor InboundFrames {
    /// Set when a frame failed to open and the link was closed because of it.
    nonisolated let violation = Mutex<SecurityViolation?>(nil)

    private let link: any Link
    private var frames: AsyncStream<[UInt8]>.Iterator
    private var cipher: FrameCipher?
    private var isFinished = false

    init(link: any Link) {
        self.link = link
        frames = link.incoming.makeAsyncIterator()
    }

    /// The next frame as it came, for the handshake; nil once the link has closed.
    func nextFrame() async -> [UInt8]? {
        guard !isFinished else { return nil }
        // The iterator is a handle on the stream's shared state: a copy put back is the same one.
        var frames = self.frames
        defer { self.frames = frames }
        guard let frame = await frames.next(isolation: self) else {
            isFinished = true
            return nil
        }
        return frame
    }

    /// Opens every later frame with `cipher`, whose counter is that of the next frame.
    func startSession(receivingWith cipher: FrameCipher) {
        self.cipher = cipher
    }

    /// The next frame opened, for the session; nil once the link has closed, or after a frame that
    /// fails to open, which closes the link and records why.
    func nextMessage() async -> [UInt8]? {
        guard var cipher, let frame = await nextFrame() else { return nil }
        guard let message = cipher.open(frame) else {
            let violation: SecurityViolation = cipher.counter == .max
                ? .counterExhausted : .frameFailedAuthentication(counter: cipher.counter, size: frame.count)
            self.violation.withLock { $0 = violation }
            isFinished = true
            link.close()
            return nil
        }
        self.cipher = cipher
        return message
    }
}
