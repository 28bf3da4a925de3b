import ArcusCRDT
import ArcusCodec

/// What one fuzz input goes through. Whatever the bytes, decoding must end in a message or a
/// `CodecError`; a message that decodes must encode and decode again to the same message.
enum FuzzTarget {
    static func run(_ bytes: [UInt8]) {
        // 1. As a whole frame (header, length, checksum).
        var decoder = FrameDecoder()
        if let message = try? decoder.decode(bytes) { checkRoundTrip(message) }

        // 2. As a payload: the first byte picks the frame byte (type, compression), the rest is
        //    the payload, framed with a correct checksum so mutations reach the payload decoders.
        if let first = bytes.first {
            let frame = FrameEncoder.frame(rawTypeByte: first & 0x1F, payload: Array(bytes.dropFirst()))
            var payloadDecoder = FrameDecoder()
            if let message = try? payloadDecoder.decode(frame) { checkRoundTrip(message) }
        }

        // 3. As a byte stream cut into frames.
        var splitter = FrameSplitter()
        splitter.append(bytes)
        var streamDecoder = FrameDecoder()
        while let frame = try? splitter.next() {
            guard (try? streamDecoder.decode(frame)) != nil else { break }
        }

        // 4. As JSON text.
        _ = try? Value(jsonBytes: bytes)
    }

    static func checkRoundTrip(_ message: SyncMessage) {
        var encoder = FrameEncoder()
        var decoder = FrameDecoder()
        let frame = encoder.encode(message)
        guard let again = try? decoder.decode(frame) else {
            fatalError("a decoded message failed to decode after re-encoding: \(message)")
        }
        guard again == message else {
            fatalError("a decoded message changed in a round trip:\n\(message)\n\(again)")
        }
    }
}
