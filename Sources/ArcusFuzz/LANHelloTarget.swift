import ArcusLAN
import ArcusMesh
import NIOCore
import NIOEmbedded

/// The LAN link's first frame and its framing (`LANHello(decoding:)`, `LANFrameDecoder` in a
/// NIO pipeline): what any host on the network can send to the listening port. A hello that
/// decodes encodes to its bytes; the framing never yields a frame over its limit.
///
/// Input: the whole input as a hello; then the input as a TCP stream (`FuzzMessages` pieces, as
/// reads deliver them) through the frame decoder, each frame it yields decoded as a hello.
enum LANHelloTarget {
    static let target = FuzzTarget(
        name: "lan-hello", entryPoint: "ArcusLAN: LANHello(decoding:), LANFrameDecoder (ByteToMessageHandler)", run: run, seeds: seeds
    )

    static let maximumLength = 4096

    static func run(_ bytes: [UInt8]) {
        decodeHello(bytes)
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(LANFrameDecoder(maximumLength: maximumLength)))
        defer { _ = try? channel.finish() }
        for piece in FuzzMessages.split(bytes[...], limit: 256) {
            do {
                try channel.writeInbound(ByteBuffer(bytes: piece))
                while let frame = try channel.readInbound(as: [UInt8].self) {
                    FuzzCheck.expect(frame.count <= maximumLength, "the LAN framing yielded \(frame.count) bytes over its limit of \(maximumLength)")
                    decodeHello(frame)
                }
            } catch {
                return
            }
        }
    }

    static func decodeHello(_ bytes: [UInt8]) {
        guard let hello = try? LANHello(decoding: bytes) else { return }
        FuzzCheck.expect(hello.encoded == bytes, "a LAN hello does not encode to its bytes: \(hello)")
    }

    static func seeds() -> [[UInt8]] {
        let peer = PeerID(bytes: (0..<16).map { UInt8($0 + 100) })!
        let hellos = [LANHello(listeningPort: 4848, peer: peer).encoded, LANHello(listeningPort: 0, peer: nil).encoded]
        let framed = hellos.map { hello in [0, 0, UInt8(hello.count >> 8), UInt8(hello.count & 0xFF)] + hello }
        return hellos + [
            FuzzMessages.join(framed),
            // A stream cut mid-header and mid-frame, then a frame at the limit.
            FuzzMessages.join([Array(framed[0].prefix(2)), Array(framed[0].dropFirst(2)), [0, 0, 0x10, 0] + [UInt8](repeating: 1, count: 4096)]),
        ]
    }
}
