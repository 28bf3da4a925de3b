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
    /// Stored bytes of the rows passed for batches already sent, and those batches' frame
    /// bytes: the ratio of the two scales what is left.
    private var storedSent: Int64 = 0
    private var wireSent: Int64 = 0
    /// Stored bytes of the rows passed for the batch being made (not yet sent, so not in the
    /// ratio: counting them before their frame would make it too low).
    private var storedUnsent: Int64 = 0

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
            storedUnsent += document.storedBytes
        }
    }

    /// The batch made from the rows passed since the last one went out in a frame of `bytes`.
    mutating func sent(frameBytes bytes: Int) {
        storedSent += storedUnsent
        storedUnsent = 0
        wireSent += Int64(bytes)
    }

    var backlog: SyncBacklog {
        let ratio = storedSent > 0 && wireSent > 0 ? Double(wireSent) / Double(storedSent) : 1
        return SyncBacklog(documents: UInt64(documents), bytes: UInt64((Double(storedBytes) * ratio).rounded()))
    }
}
