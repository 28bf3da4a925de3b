/// Who opened a link. Both ends of a link must agree: one dialled, the other accepted.
public enum LinkRole: UInt8, Sendable {
    case dialer = 1, acceptor = 2
}

/// The first frame each end sends on a new link: who it is, which session incarnation, and which
/// link this is. The dialer names the link (`dialID`, growing with each dial) so that both ends
/// identify it the same way and make the same tie-break between duplicate links.
public struct LinkHello: Sendable, Hashable {
    public var peer: PeerID
    /// Random per session instance: a change means the peer restarted and forgot its state.
    public var incarnation: UInt64
    public var role: LinkRole
    /// The dialer's number for the link; zero from the acceptor.
    public var dialID: UInt64
    /// How many messages the sender of the hello accepts ahead of what its consumer has taken.
    public var receiveWindow: Int
}

/// What a session puts in each message of a link's `MessageChannel` (which fragments it to the
/// link's MTU). A type byte, then fields; integers are LEB128 varints, like fragment lengths.
///
/// ```
/// 0x01 hello       version(1) role(1) dialID(8) incarnation(8) window(varint) peer id(16)
/// 0x02 data        sequence ack payload…
/// 0x03 ack         ack
/// 0x04 heartbeat   nonce ack
/// 0x05 reply       nonce
/// 0x06 presence    report… (a `PresenceReport`'s bytes, at most `PresenceReport.Limits.encodedBytes`)
/// ```
/// `ack` is cumulative: every message up to it was taken by the consumer. Presence frames carry
/// no sequence number: they are best effort, and a lost one is made good by the next report.
package enum SessionFrame: Sendable, Equatable {
    case hello(LinkHello)
    case data(sequence: Int, ack: Int, payload: [UInt8])
    case ack(Int)
    case heartbeat(nonce: Int, ack: Int)
    case heartbeatReply(nonce: Int)
    case presence([UInt8])

    static let version: UInt8 = 1
    /// The most bytes a data frame adds to its payload: a type byte and two 10-byte varints.
    static let dataOverhead = 21
    /// What a presence frame adds to its report: the type byte.
    static let presenceOverhead = 1

    private enum Tag: UInt8 {
        case hello = 1, data, ack, heartbeat, heartbeatReply, presence
    }

    package func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        switch self {
        case .hello(let hello):
            bytes.append(Tag.hello.rawValue)
            bytes.append(Self.version)
            bytes.append(hello.role.rawValue)
            appendFixed(hello.dialID, to: &bytes)
            appendFixed(hello.incarnation, to: &bytes)
            LengthPrefix.append(hello.receiveWindow, to: &bytes)
            bytes += hello.peer.bytes
        case .data(let sequence, let ack, let payload):
            bytes.reserveCapacity(Self.dataOverhead + payload.count)
            bytes.append(Tag.data.rawValue)
            LengthPrefix.append(sequence, to: &bytes)
            LengthPrefix.append(ack, to: &bytes)
            bytes += payload
        case .ack(let ack):
            bytes.append(Tag.ack.rawValue)
            LengthPrefix.append(ack, to: &bytes)
        case .heartbeat(let nonce, let ack):
            bytes.append(Tag.heartbeat.rawValue)
            LengthPrefix.append(nonce, to: &bytes)
            LengthPrefix.append(ack, to: &bytes)
        case .heartbeatReply(let nonce):
            bytes.append(Tag.heartbeatReply.rawValue)
            LengthPrefix.append(nonce, to: &bytes)
        case .presence(let report):
            bytes.reserveCapacity(1 + report.count)
            bytes.append(Tag.presence.rawValue)
            bytes += report
        }
        return bytes
    }

    /// Decodes one frame; throws for anything that is not exactly one well-formed frame.
    package init(decoding bytes: [UInt8]) throws(SessionFrameError) {
        guard let first = bytes.first else { throw .emptyFrame }
        guard let tag = Tag(rawValue: first) else { throw .unknownType(first) }
        var reader = FieldReader(bytes: bytes, frame: "\(tag)")
        switch tag {
        case .hello:
            let version = try reader.byte()
            guard version == Self.version else { throw .unsupportedVersion(version) }
            let roleByte = try reader.byte()
            guard let role = LinkRole(rawValue: roleByte) else { throw .unknownRole(roleByte) }
            let dialID = try reader.fixed()
            let incarnation = try reader.fixed()
            let window = try reader.varint()
            guard let peer = PeerID(helloBytes: try reader.bytes(PeerID.size)) else { throw .truncated(frame: "hello") }
            try reader.finish()
            self = .hello(LinkHello(peer: peer, incarnation: incarnation, role: role, dialID: dialID, receiveWindow: window))
        case .data:
            let sequence = try reader.varint()
            let ack = try reader.varint()
            self = .data(sequence: sequence, ack: ack, payload: reader.rest())
        case .ack:
            let ack = try reader.varint()
            try reader.finish()
            self = .ack(ack)
        case .heartbeat:
            let nonce = try reader.varint()
            let ack = try reader.varint()
            try reader.finish()
            self = .heartbeat(nonce: nonce, ack: ack)
        case .heartbeatReply:
            let nonce = try reader.varint()
            try reader.finish()
            self = .heartbeatReply(nonce: nonce)
        case .presence:
            // Refused by its length before the report is copied out of the frame.
            let size = bytes.count - 1
            guard size <= PresenceReport.Limits.encodedBytes else {
                throw .presenceTooLarge(size: size, limit: PresenceReport.Limits.encodedBytes)
            }
            self = .presence(reader.rest())
        }
    }
}

private func appendFixed(_ value: UInt64, to bytes: inout [UInt8]) {
    for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
}

/// Reads the fields of one frame after its type byte, refusing to run past its end.
private struct FieldReader {
    let bytes: [UInt8]
    let frame: String
    var index = 1

    mutating func byte() throws(SessionFrameError) -> UInt8 {
        guard index < bytes.count else { throw .truncated(frame: frame) }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func fixed() throws(SessionFrameError) -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(try byte()) }
        return value
    }

    mutating func varint() throws(SessionFrameError) -> Int {
        guard let (value, end) = LengthPrefix.read(from: bytes, at: index) else { throw .truncated(frame: frame) }
        index = end
        return value
    }

    mutating func bytes(_ count: Int) throws(SessionFrameError) -> ArraySlice<UInt8> {
        guard count <= bytes.count - index else { throw .truncated(frame: frame) }
        defer { index += count }
        return bytes[index..<index + count]
    }

    func rest() -> [UInt8] { Array(bytes[index...]) }

    func finish() throws(SessionFrameError) {
        guard index == bytes.count else { throw .trailingBytes(frame: frame, count: bytes.count - index) }
    }
}
