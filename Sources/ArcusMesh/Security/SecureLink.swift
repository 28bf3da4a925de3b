import Synchronization

/// A `Link` whose every message is sealed with ChaCha20-Poly1305 under keys that only the two
/// ends of one handshake hold (see `MeshHandshake`, the only maker of secure links), one key and
/// one counter per direction. The counter is the nonce and is never sent: the link below is
/// ordered, so the receiver expects exactly the next number.
///
/// A frame that fails to open — altered, replayed, reordered, or sealed in another session —
/// closes the link at once and finishes `incoming` after the messages before it; `securityViolation`
/// then says why. It keeps the link's order, backpressure and closing, so it passes the same
/// conformance suite as any link. Concurrent senders take turns, so frames go out in counter order.
public final class SecureLink: Link {
    /// The link the sealed frames travel on. Sending on it directly would break the session.
    public let link: any Link
    /// Who is at the other end, as the handshake authenticated it.
    public let peer: AuthenticatedPeer
    /// The peer's messages, opened, in order; finishes when the link closes or a frame fails to open.
    public let incoming: AsyncStream<[UInt8]>
    /// Nil after a full handshake; after a resumed one, the hints this side sent and the peer
    /// gave (see `MeshHandshake`).
    public let resumption: ResumptionHints?

    private let inbound: InboundFrames
    private let turns = SendTurns()
    /// Touched only by the sender holding the turn; the lock makes that visible to the compiler.
    private let sending: Mutex<FrameCipher>

    init(link: any Link, peer: AuthenticatedPeer, inbound: InboundFrames, sending: FrameCipher, resumption: ResumptionHints? = nil) {
        self.link = link
        self.peer = peer
        self.resumption = resumption
        self.inbound = inbound
        self.sending = Mutex(sending)
        incoming = AsyncStream(unfolding: { await inbound.nextMessage() })
    }

    public var kind: LinkKind { link.kind }
    public var metrics: LinkMetrics { link.metrics }

    /// The link's MTU less the 16-byte tag each frame carries.
    public var mtu: Int { link.mtu - FrameCipher.overhead }

    public var description: String { "\(link.description), sealed with \(peer)" }

    /// Why the link was closed, if one of the peer's frames failed to open.
    public var securityViolation: SecurityViolation? { inbound.violation.withLock { $0 } }

    /// Seals and sends one message of at most `mtu` bytes; see `Link.send`.
    public func send(_ message: [UInt8]) async throws {
        guard message.count <= mtu else { throw LinkError.messageTooLarge(size: message.count, mtu: mtu) }
        try await turns.begin()
        defer { turns.end() }
        guard let frame = sending.withLock({ $0.seal(message) }) else {
            link.close()
            throw LinkError.closed
        }
        try await link.send(frame)
        // Only a frame the link took uses up its counter: a cancelled send leaves no gap.
        sending.withLock { $0.advance() }
    }

    public func close() {
        link.close()
    }
}

/// What the two ends of a resumed link told each other in the handshake.
public struct ResumptionHints: Sendable, Hashable {
    public let sent: [UInt8]
    public let received: [UInt8]

    public init(sent: [UInt8], received: [UInt8]) {
        self.sent = sent
        self.received = received
    }
}
