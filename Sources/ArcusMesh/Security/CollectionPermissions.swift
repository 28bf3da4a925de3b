import ArcusCodec

/// What a peer may do with each collection: read (be sent its documents) and write (have its
/// changes accepted). The sync engine enforces them; the mesh only carries them.
public struct CollectionPermissions: Sendable, Hashable, CustomStringConvertible {
    public var read: CollectionSet
    public var write: CollectionSet

    public init(read: CollectionSet, write: CollectionSet) {
        self.read = read
        self.write = write
    }

    /// Everything: what a peer proving membership with the shared mesh secret gets.
    public static let full = CollectionPermissions(read: .all, write: .all)

    public var description: String { "read \(read), write \(write)" }
}
