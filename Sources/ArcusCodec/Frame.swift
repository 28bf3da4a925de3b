/// The frame around every message:
///
///     byte 0      version (3 bits) << 5 | compressed (1 bit) << 4 | message type (4 bits)
///     varint      payload length
///     payload     when compressed: varint of the expanded length, then a Zstandard frame
///     4 bytes     CRC-32C of everything before it, little-endian
///
/// Six bytes of overhead for a payload under 128 bytes. Payloads of `compressionThreshold`
/// bytes or more are compressed when that makes them smaller.
public enum FrameHeader {
    public static let currentVersion: UInt8 = 1
    /// Overhead beyond the payload, for payloads under 128 bytes.
    public static let minimumOverhead = 6
    /// Overhead beyond the payload at most: the type byte, a 10-byte varint, the CRC.
    public static let maximumOverhead = 15
    static let compressedFlag: UInt8 = 0x10
    public static let compressionThreshold = 256
}

/// Turns messages into frames. Keep one per outgoing stream: it carries the stream's
/// `EncodingContext`.
public struct FrameEncoder: Sendable {
    public var context: EncodingContext

    public init(limits: CodecLimits = .standard) { context = EncodingContext(limits: limits) }

    public mutating func encode(_ message: SyncMessage) -> [UInt8] {
        var payload = ByteWriter(capacity: 64)
        context.writePayload(message, to: &payload)
        let bytes = payload.take()
        // Compressed only as far as every decoder takes it: within the frame limit and the
        // expansion ratio (a payload that shrinks more goes as it is).
        if bytes.count >= FrameHeader.compressionThreshold, bytes.count <= context.limits.maximumFrameLength,
           let packed = Compression.compress(bytes), bytes.count <= packed.count * context.limits.maximumExpansionRatio {
            var compressed = ByteWriter(capacity: packed.count + 4)
            compressed.writeVarint(bytes.count)
            compressed.write(contentsOf: packed)
            if compressed.count < bytes.count {
                return Self.frame(type: message.type.rawValue | FrameHeader.compressedFlag, payload: compressed.take())
            }
        }
        return Self.frame(type: message.type.rawValue, payload: bytes)
    }

    static func frame(type: UInt8, payload: [UInt8]) -> [UInt8] {
        frame(rawTypeByte: type, payload: payload)
    }

    /// A frame around `payload` as it is, with `rawTypeByte` (message type and compression flag)
    /// in the first byte: for tests and the fuzzer, which need frames of any content.
    public static func frame(rawTypeByte type: UInt8, payload: [UInt8]) -> [UInt8] {
        var w = ByteWriter(capacity: payload.count + 10)
        w.write(FrameHeader.currentVersion << 5 | type)
        w.writeVarint(payload.count)
        w.write(contentsOf: payload)
        let crc = CRC32C.checksum(w.bytes)
        w.writeFixed32(crc)
        return w.take()
    }

    /// A compressed frame of `type` whose payload expands to `payload` as it is, whatever its
    /// size or ratio: for tests, benchmarks and the fuzzer, which need hostile frames (a
    /// decoder refuses what `encode` never makes).
    public static func compressedFrame(type: MessageType, payload: [UInt8]) -> [UInt8] {
        var compressed = ByteWriter(capacity: 64)
        compressed.writeVarint(payload.count)
        compressed.write(contentsOf: Compression.compress(payload, evenIfLarger: true) ?? [])
        return frame(rawTypeByte: type.rawValue | FrameHeader.compressedFlag, payload: compressed.take())
    }
}

/// Turns frames back into messages. Keep one per incoming stream.
public struct FrameDecoder: Sendable {
    public var context: DecodingContext

    public init(limits: CodecLimits = .standard) { context = DecodingContext(limits: limits) }

    /// Decodes one whole frame. Returns nil for a well-formed frame of a message type this build
    /// does not know (it is skipped); throws for anything malformed, and for a frame that would
    /// decode to more than `CodecLimits.maximumDecodedBytes` (see `DecodeAllowance`).
    public mutating func decode(_ frame: [UInt8]) throws(CodecError) -> SyncMessage? {
        context.allowance = DecodeAllowance(limit: context.limits.maximumDecodedBytes)
        defer { context.allowance = .unlimited }
        var r = ByteReader(frame)
        let first = try r.readByte()
        guard first >> 5 == FrameHeader.currentVersion else { throw .unsupportedVersion(first >> 5) }
        let length = try r.readCount("frame payload length", limit: context.limits.maximumFrameLength)
        guard r.remaining == length + 4 else {
            if r.remaining < length + 4 { throw .truncated(offset: frame.count, needed: length + 4 - r.remaining) }
            throw .trailingBytes(count: r.remaining - length - 4)
        }
        let payloadStart = r.offset
        let crcOffset = payloadStart + length
        var crcReader = ByteReader(frame, from: crcOffset)
        let expected = try crcReader.readFixed32()
        let actual = frame.withUnsafeBytes { CRC32C.update(0, UnsafeRawBufferPointer(rebasing: $0[0..<crcOffset])) }
        guard expected == actual else { throw .checksumMismatch(expected: expected, actual: actual) }
        guard let type = MessageType(rawValue: first & 0x0F) else { return nil }
        var payload = ByteReader(frame, from: payloadStart, to: crcOffset)
        if first & FrameHeader.compressedFlag != 0 {
            // Bounded before anything is allocated: by the frame limit, by the expansion ratio
            // (a few hundred bytes never stand for megabytes), and by the decode allowance.
            let length = try payload.readVarint()
            let limit = UInt64(context.limits.maximumFrameLength)
            guard length <= limit else { throw .limitExceeded(what: "expanded payload length", value: length, limit: limit) }
            let compressed = UInt64(crcOffset - payload.offset)
            let ratioLimit = compressed.multipliedReportingOverflow(by: UInt64(context.limits.maximumExpansionRatio))
            guard ratioLimit.overflow || length <= ratioLimit.partialValue else {
                throw .limitExceeded(what: "expanded payload length (\(context.limits.maximumExpansionRatio) times its \(compressed) compressed bytes)",
                                     value: length, limit: ratioLimit.partialValue)
            }
            try context.allowance.charge(Int(length))
            let inflated = try Compression.decompress(frame[payload.offset..<crcOffset], length: Int(length))
            payload = ByteReader(inflated)
        }
        let message = try context.readPayload(type, from: &payload)
        try payload.expectEnd()
        return message
    }
}

/// Cuts a byte stream (TCP) into whole frames, refusing a declared length over the limit before
/// buffering it.
public struct FrameSplitter: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0
    public let limits: CodecLimits

    public init(limits: CodecLimits = .standard) { self.limits = limits }

    public mutating func append(_ bytes: some Collection<UInt8>) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame, or nil when more bytes are needed.
    public mutating func next() throws(CodecError) -> [UInt8]? {
        var r = ByteReader(buffer, from: start)
        guard r.remaining >= 2 else { return nil }
        _ = try r.readByte()
        let length: UInt64
        do {
            length = try r.readVarint()
        } catch .truncated {
            return nil
        }
        guard length <= UInt64(limits.maximumFrameLength) else {
            throw .limitExceeded(what: "frame payload length", value: length, limit: UInt64(limits.maximumFrameLength))
        }
        let total = r.offset - start + Int(length) + 4
        guard buffer.count - start >= total else { return nil }
        let frame = Array(buffer[start..<start + total])
        start += total
        if start > 1 << 16 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        return frame
    }
}
