import ArcusTransportConformance
import NIOCore
import NIOPosix

/// A TCP client that writes whatever bytes a test gives it: a peer that breaks the framing.
struct RawClient {
    let channel: any Channel

    /// Connects to 127.0.0.1:`port` from `source` (any address of 127.0.0.0/8: every one is this
    /// machine's, so tests can play several hosts).
    static func connect(toPort port: Int, from source: String = "127.0.0.1") async throws -> RawClient {
        RawClient(channel: try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(to: try SocketAddress(ipAddress: source, port: 0))
            .connect(host: "127.0.0.1", port: port).get())
    }

    /// Whether the other end has closed the connection by now.
    var isClosedByPeer: Bool { !channel.isActive }

    func write(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes)).get()
    }

    /// Waits until the other end has closed the connection. It polls rather than awaiting the
    /// close future, which ignores cancellation and would let a broken transport hang the test.
    func closedByPeer(within limit: Duration) async throws {
        let channel = self.channel
        try await within(limit, "the transport closing the raw connection") {
            while channel.isActive { try await Task.sleep(for: .milliseconds(10)) }
        }
    }

    func close() async {
        try? await channel.close()
    }
}

/// A LAN frame as the wire has it, written here from the format rather than by the transport's
/// own encoder: a 4-byte big-endian length, then the payload.
func lanFrame(_ payload: [UInt8]) -> [UInt8] {
    lanFrameHeader(length: UInt32(payload.count)) + payload
}

func lanFrameHeader(length: UInt32) -> [UInt8] {
    [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
}
