/// The name of a peer in the mesh, as its links announce it in their hello. Sessions are keyed by
/// it, and the tie-break between links that both peers dialled at once compares it.
///
/// At most `maximumLength` bytes of UTF-8 and never empty, so that a hello is small and its length
/// can be checked before anything is allocated.
public struct PeerID: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public static let maximumLength = 64

    public let name: String

    /// Nil if `name` is empty or longer than `maximumLength` bytes of UTF-8.
    public init?(_ name: String) {
        guard !name.isEmpty, name.utf8.count <= Self.maximumLength else { return nil }
        self.name = name
    }

    public init(stringLiteral name: String) {
        guard let peer = PeerID(name) else { preconditionFailure("\"\(name)\" is not a valid peer id") }
        self = peer
    }

    /// Byte order of the UTF-8, the same on every platform, so both ends of a link agree.
    public static func < (lhs: PeerID, rhs: PeerID) -> Bool {
        lhs.name.utf8.lexicographicallyPrecedes(rhs.name.utf8)
    }

    public var description: String { name }
}
