import ArcusCodec
import ArcusCRDT

/// Why a store operation failed. Each case says what a person needs to act on it.
public enum StoreError: Error, Sendable, CustomStringConvertible {
    /// Another process has the data directory open.
    case dataDirectoryInUse(path: String, holder: String)
    case cannotOpen(path: String, reason: String)
    /// The store was written by a newer Arcus: its schema has changes (`unknown`) this build lacks.
    case newerSchema(path: String, unknown: [String])
    /// `write` was called inside another write transaction on the same thread or task.
    case nestedWriteTransaction
    /// A statement or builder call was malformed (DQL errors carry their line and column).
    case invalidQuery(String)
    /// Plain INSERT of a document whose `_id` exists.
    case documentExists(collection: String, id: String)
    case invalidDocument(String)
    /// A stored document state failed to decode: the data directory is damaged.
    case corruptDocument(collection: String, id: String, reason: CodecError)
    case attachment(String)
    /// The store's clock is at the last time a timestamp can hold; no later write can be ordered.
    case clockExhausted(last: Timestamp)
    /// The store was closed (`Store.close`, or its agent stopped).
    case closed

    public var description: String {
        switch self {
        case .dataDirectoryInUse(let path, let holder):
            return "the data directory \(path) is in use by \(holder); stop that process, or give this one its own --data directory"
        case .cannotOpen(let path, let reason):
            return "cannot open the store at \(path): \(reason)"
        case .newerSchema(let path, let unknown):
            return "the store at \(path) was written by a newer version of Arcus (schema changes \(unknown.joined(separator: ", ")) are unknown to this one), which this one could misread; run that version or a later one, or give this one a new --data directory"
        case .nestedWriteTransaction:
            return "a write transaction was started inside another one; do all writes through the outer transaction (nesting would deadlock)"
        case .invalidQuery(let message):
            return message
        case .documentExists(let collection, let id):
            return "a document with _id \(id) already exists in \(collection); use ON ID CONFLICT DO UPDATE to merge, or DO NOTHING to skip"
        case .invalidDocument(let message):
            return "invalid document: \(message)"
        case .corruptDocument(let collection, let id, let reason):
            return "the stored state of \(collection)/\(id) does not decode (\(reason)); the data directory is damaged"
        case .attachment(let message):
            return message
        case .clockExhausted(let last):
            return "this store's clock is at \(last), the last time a timestamp can hold, so no later write can be ordered; reopen the store: opening recovers from times beyond the clock skew allowance"
        case .closed:
            return "the store is closed (its agent was stopped); open it again, or start the agent again, to use it"

        }
    }
}
