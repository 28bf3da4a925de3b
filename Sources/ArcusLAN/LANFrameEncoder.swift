import NIOCore

/// Writes each message as a `LANFrameDecoder` reads it: its length in 4 bytes, big-endian, then
/// the message. `LANLink.send` has checked the length against the MTU.
struct LANFrameEncoder: MessageToByteEncoder {
    typealias OutboundIn = [UInt8]

    func encode(data message: [UInt8], out: inout ByteBuffer) throws {
        out.reserveCapacity(LANFrameDecoder.headerSize + message.count)
        out.writeInteger(UInt32(message.count))
        out.writeBytes(message)
    }
}
