import ArcusCodec

/// What a peer may do with each collection: read (be sent its documents) and write (have its
/// changes accepted), and whether it may relay (pass on other writers' changes, which receivers
/// then take on its word that their writers made them). The sync engine enforces them; the mesh
/// only carries them.
public struct CollectionPermissions: Sendable, Hashable, CustomStringConvertible {
    public var read: CollectionSet
    public var write: CollectionSet
    public var relay: Bool

    public init(read: CollectionSet, write: CollectionSet, relay: Bool = false) {
        self.read = read
        self.write = write
        self.relay = relay
    }

    /// Everything: what a peer proving membership with the shared mesh secret gets.
    public static let full = CollectionPermissions(read: .all, write: .all, relay: true)

    public var description: String { "read \(read), write \(write)\(relay ? ", relay" : "")" }
}
