import ArcusMesh

/// One message on a link subject: a fixed 15-byte header, what the kind carries, and a 16-byte
/// tag that only the two peers can make (`CloudFrameSeal`).
///
///     0      version (2)
///     1      kind: open 1, accept 2, data 3, credit 4, close 5
///     2      flags: bit 0 set when the sender dialled the link
///     3…10   link id: the dialler's count of the links it opened in this run, from 1
///            (big-endian); an acceptor takes each dialler's opens in increasing order only
///     11…14  value: data → sequence number; credit → bytes granted so far on the link, in
///            all (mod 2^32); open, accept → window
///     15…    body: data → the message; open → dialler's instance, acceptor's instance, and the
///            dialler's public key (8 + 8 + 64); accept → acceptor's instance (8); credit,
///            close → nothing
///     last 16  tag: HMAC-SHA256 of the two peers' pair key over both runs and bytes 0…
///
/// The relay sees this header in the clear and the message sealed: the message is a frame of
/// the mesh's secure session (SecureLink), never a document. Version 1 frames (no tag) are
/// refused with `CloudFrameError.unknownVersion`, which says the sender runs an older Arcus.
package struct CloudFrame: Sendable, Equatable {
    package enum Kind: UInt8, Sendable {
        case open = 1, accept, data, credit, close
    }

    static let version: UInt8 = 2
    package static let headerSize = 15
    /// The bytes a frame adds to what it carries: its header and its tag.
    package static let overhead = headerSize + CloudFrameSeal.tagSize
    /// The body of an open: both instances and the dialler's public key.
    package static let openBodySize = 8 + 8 + PeerPublicKey.size

    var kind: Kind
    /// Whether the sender is the end that dialled: with the link id, it names the link on both
    /// ends even when both peers dial each other and draw the same id.
    var fromDialler: Bool
    var link: UInt64
    var value: UInt32
    var body: [UInt8]
    /// As received: the bytes the tag covers, and the tag. Empty for a frame made here.
    private(set) var authenticated: ArraySlice<UInt8> = []
    private(set) var tag: ArraySlice<UInt8> = []

    package init(_ kind: Kind, fromDialler: Bool, link: UInt64, value: UInt32 = 0, body: [UInt8] = []) {
        self.kind = kind
        self.fromDialler = fromDialler
        self.link = link
        self.value = value
        self.body = body
    }

    /// Header and body, without the tag (`CloudFrameSeal.seal` adds it).
    package var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.overhead + body.count)
        bytes.append(Self.version)
        bytes.append(kind.rawValue)
        bytes.append(fromDialler ? 1 : 0)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: link >> UInt64(shift))) }
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
        bytes.append(contentsOf: body)
        return bytes
    }

    /// Reads a frame and its tag, or says why not; the tag is checked by the caller, which knows
    /// whose it must be. `maximumBody` bounds what is accepted before anything is copied: a relay
    /// may carry anything anyone with the subject's permission published.
    package init(decoding bytes: [UInt8], maximumBody: Int) throws(CloudFrameError) {
        guard bytes.first != 1 else { throw .unknownVersion(1) }
        guard bytes.count >= Self.overhead else { throw .truncated(bytes.count) }
        guard bytes[0] == Self.version else { throw .unknownVersion(bytes[0]) }
        guard let kind = Kind(rawValue: bytes[1]) else { throw .unknownKind(bytes[1]) }
        guard bytes[2] & ~1 == 0 else { throw .unknownFlags(bytes[2]) }
        let end = bytes.count - CloudFrameSeal.tagSize
        let bodySize = end - Self.headerSize
        guard bodySize <= maximumBody else { throw .tooLarge(bodySize, limit: maximumBody) }
        var link: UInt64 = 0
        for index in 3..<11 { link = link << 8 | UInt64(bytes[index]) }
        var value: UInt32 = 0
        for index in 11..<15 { value = value << 8 | UInt32(bytes[index]) }
        let body = Array(bytes[Self.headerSize..<end])
        switch kind {
        case .open: guard body.count == Self.openBodySize else { throw .badBody(kind, body.count) }
        case .accept: guard body.count == 8 else { throw .badBody(kind, body.count) }
        case .credit, .close: guard body.isEmpty else { throw .badBody(kind, body.count) }
        case .data: break
        }
        self.init(kind, fromDialler: bytes[2] & 1 == 1, link: link, value: value, body: body)
        authenticated = bytes[..<end]
        tag = bytes[end...]
    }

    package static func == (lhs: CloudFrame, rhs: CloudFrame) -> Bool {
        (lhs.kind, lhs.fromDialler, lhs.link, lhs.value, lhs.body) == (rhs.kind, rhs.fromDialler, rhs.link, rhs.value, rhs.body)
    }
}

/// Why bytes on a link subject are not a frame. Such bytes are dropped and counted, never
/// allowed to harm a link other than the one they name.
package enum CloudFrameError: Error, Sendable, Equatable, CustomStringConvertible {
    case truncated(Int)
    case unknownVersion(UInt8)
    case unknownKind(UInt8)
    case unknownFlags(UInt8)
    case tooLarge(Int, limit: Int)
    case badBody(CloudFrame.Kind, Int)

    package var description: String {
        switch self {
        case .truncated(let count): return "a cloud frame of \(count) bytes is shorter than its \(CloudFrame.headerSize)-byte header"
        case .unknownVersion(let version) where version < CloudFrame.version:
            return "cloud frame version \(version) is older than \(CloudFrame.version): the peer runs an older Arcus, whose cloud frames are not authenticated; upgrade it"
        case .unknownVersion(let version): return "cloud frame version \(version) is not \(CloudFrame.version): is the peer running a newer Arcus?"
        case .unknownKind(let kind): return "unknown cloud frame kind \(kind)"
        case .unknownFlags(let flags): return "unknown cloud frame flags \(flags)"
        case .tooLarge(let size, let limit): return "a cloud frame body of \(size) bytes is over the limit of \(limit)"
        case .badBody(let kind, let size): return "a cloud \(kind) frame with a body of \(size) bytes"
        }
    }
}

extension UInt64 {
    /// Big-endian bytes, for instance ids in frame bodies and announcements.
    var bigEndianBytes: [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: self >> UInt64(56 - 8 * $0)) } }

    init(bigEndianBytes bytes: some Collection<UInt8>) {
        self = bytes.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }
}
