import ArcusMesh

/// A `Link` over a connected SOCK_SEQPACKET socket — an L2CAP LE credit-based channel or its
/// AF_UNIX emulation: one message is one SDU is one packet, so boundaries hold without framing.
/// Its MTU is the send MTU (the largest SDU the peer accepts).
public final class SeqPacketLink: Link {
    public let kind: LinkKind
    public let mtu: Int
    public let description: String
    public let metrics: LinkMetrics
    public let incoming: AsyncStream<[UInt8]>
    private let loop: SeqPacketIOLoop

    /// The largest MTU a link takes: L2CAP's SDU limit.
    public static let maximumMTU = Int(UInt16.max)

    /// Takes over `socket` (connected); `phy`, if given, paces sends as that radio would. A send
    /// the kernel refuses ends the link unless `refusedSendEndsLink` is false (the management
    /// socket: a command refused at send, as some are while a controller is off, is not the end).
    public init(
        socket: SeqPacketSocket, mtu: Int, kind: LinkKind = .bluetooth, description: String, phy: EmulatedPHY? = nil,
        refusedSendEndsLink: Bool = true
    ) throws {
        precondition((1...Self.maximumMTU).contains(mtu), "an SDU MTU is 1...65535 bytes")
        self.kind = kind
        self.mtu = mtu
        self.description = description
        if let phy {
            let oneWay = Duration.nanoseconds(Int64(phy.latencyNanoseconds))
            metrics = LinkMetrics(roundTrip: oneWay * 2, bytesPerSecond: phy.goodputBytesPerSecond(mtu: mtu), cost: kind.defaultCost)
        } else {
            metrics = LinkMetrics(cost: kind.defaultCost)
        }
        let loop = try SeqPacketIOLoop(socket: socket, mtu: mtu, phy: phy, refusedSendEndsLink: refusedSendEndsLink)
        self.loop = loop
        incoming = AsyncStream(unfolding: { await loop.receive() })
        loop.start()
    }

    deinit { loop.close() }

    public func send(_ message: [UInt8]) async throws {
        guard message.count <= mtu else { throw LinkError.messageTooLarge(size: message.count, mtu: mtu) }
        try await loop.send(message)
    }

    public func close() {
        loop.close()
    }

    /// Runs `handler` once the link has closed, from either side; at once if it has.
    public func onClose(_ handler: @escaping @Sendable () -> Void) {
        loop.onClose(handler)
    }

    public var isClosed: Bool { loop.isClosed }
}
