/// Documents peers' batches brought to this store, and how many of them brought nothing new:
/// deltas whose events the store already had all of (`WriteTransaction.merge` changed nothing).
/// In a mesh where each peer hears many, every session offers each change the other side lacks,
/// so a peer is handed the same change once per neighbour that had it first: `duplicates` counts
/// the extra copies.
public struct SyncDeliveries: Sendable, Hashable {
    /// Document deltas merged (admitted ones; a refused delta is not merged).
    public var documents = 0
    /// Of those, deltas that changed nothing.
    public var duplicates = 0

    public init(documents: Int = 0, duplicates: Int = 0) {
        self.documents = documents
        self.duplicates = duplicates
    }
}
