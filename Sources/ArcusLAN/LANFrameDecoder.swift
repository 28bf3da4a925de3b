import NIOCore

/// Splits a TCP stream into the frames a `LANLink` carries: a 4-byte big-endian length, then that
/// many bytes. A length over `maximumLength` is refused before a byte of its frame is buffered,
/// so a hostile or broken peer cannot make the link allocate more than one frame.
package struct LANFrameDecoder: ByteToMessageDecoder {
    package typealias InboundOut = [UInt8]

    static let headerSize = 4
    let maximumLength: Int

    package init(maximumLength: Int) { self.maximumLength = maximumLength }

    package mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return .needMoreData }
        guard length <= maximumLength else {
            throw LANLinkFailure.frameTooLong(length: Int(length), limit: maximumLength)
        }
        guard buffer.readableBytes >= Self.headerSize + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: Self.headerSize)
        context.fireChannelRead(wrapInboundOut(buffer.readBytes(length: Int(length))!))
        return .continue
    }

    package mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        guard buffer.readableBytes == 0 else {
            let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self).map(Int.init)
            throw LANLinkFailure.truncatedFrame(received: buffer.readableBytes, length: length)
        }
        return .needMoreData
    }
}
