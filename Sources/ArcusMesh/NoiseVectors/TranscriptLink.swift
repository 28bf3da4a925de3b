import Synchronization

/// A link whose two directions the vector runner works by hand: it keeps the frames sent on it
/// for the runner to compare with a vector's ciphertexts, and delivers whatever frames the runner
/// hands it. A `SecureLink` over it seals and opens exactly as over a radio.
final class TranscriptLink: Link {
    let mtu: Int
    let incoming: AsyncStream<[UInt8]>
    private let deliveries: AsyncStream<[UInt8]>.Continuation
    private let sent = Mutex<[[UInt8]]>([])

    init(mtu: Int) {
        self.mtu = mtu
        (incoming, deliveries) = AsyncStream.makeStream(of: [UInt8].self)
    }

    var kind: LinkKind { .loopback }
    var description: String { "a test vector's transcript" }

    /// Keeps the frame for `takeSent`.
    func send(_ message: [UInt8]) async throws {
        guard message.count <= mtu else { throw LinkError.messageTooLarge(size: message.count, mtu: mtu) }
        sent.withLock { $0.append(message) }
    }

    /// The frames sent since the last call, oldest first.
    func takeSent() -> [[UInt8]] {
        sent.withLock { frames in
            defer { frames = [] }
            return frames
        }
    }

    /// Makes `frame` the next one `incoming` yields.
    func deliver(_ frame: [UInt8]) {
        deliveries.yield(frame)
    }

    func close() {
        deliveries.finish()
    }
}
