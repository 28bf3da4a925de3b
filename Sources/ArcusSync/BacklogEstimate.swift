import ArcusCodec
import ArcusStore

/// What a backfill under way still has to go through, for the subscriber's progress: the rows
/// of the change log between the cursor and the backfill's end (of the query's collection), and
/// their stored bytes, scaled by what a stored byte has cost on the wire so far.
struct BacklogEstimate {
    let collection: String?
    /// The backfill's end: rows past it go as live changes.
    let end: Int64
    var documents: Int
    var storedBytes: Int64
    /// Stored bytes of the rows passed, and the frame bytes of the batches sent for them.
    var storedPassed: Int64 = 0
    var wireSent: Int64 = 0

    init(store: Store, after cursor: Int64, through end: Int64, collection: String?) throws {
        self.collection = collection
        self.end = end
        (documents, storedBytes) = try store.backlog(after: cursor, through: end, collection: collection)
    }

    /// The backfill read these rows (sent or passed over).
    mutating func passed(_ logged: [LoggedDocument]) {
        for document in logged where document.sequence <= end && (collection == nil || document.key.collection == collection) {
            documents = max(0, documents - 1)
            storedBytes = max(0, storedBytes - document.storedBytes)
            storedPassed += document.storedBytes
        }
    }

    var backlog: SyncBacklog {
        let ratio = storedPassed > 0 && wireSent > 0 ? Double(wireSent) / Double(storedPassed) : 1
        return SyncBacklog(documents: UInt64(documents), bytes: UInt64((Double(storedBytes) * ratio).rounded()))
    }
}
