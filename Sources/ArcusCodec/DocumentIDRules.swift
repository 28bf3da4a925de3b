import ArcusCRDT

/// What a document's `_id` may be, wherever it comes from: a local write (ArcusStore checks it)
/// or a peer's delta (the decoder does). One rule for both, so that every document a store
/// holds can be sent to a peer, and no peer can make a store hold what it could not write.
///
/// The length bound is what keeps a key cheap: each key of a batch or a `missing` message is a
/// copy of its id, and a one-byte key ("the previous id, one up") can stand for a whole id.
public enum DocumentIDRules {
    /// Longest `_id`, in bytes: a string's UTF-8, or an object's canonical JSON. Room for any id
    /// people write (UUIDs, paths, e-mail addresses, composite keys), not for a payload.
    public static let maximumLength = 1024
    /// Deepest nesting of an object `_id`.
    public static let maximumObjectDepth = 8

    /// Why `id` cannot be a document's `_id` (a sentence a person can act on), or nil if it can.
    public static func problem(with id: Value) -> String? {
        switch id {
        case .string(let s) where !s.isEmpty:
            let length = s.utf8.count
            if length > maximumLength { return "an _id of \(length) bytes is longer than the \(maximumLength) bytes an _id may have" }
            return nil
        case .object(let fields) where !fields.isEmpty:
            if id.nestingDepth > maximumObjectDepth { return "an object _id may nest at most \(maximumObjectDepth) levels" }
            let length = id.jsonString.utf8.count
            if length > maximumLength {
                return "an object _id of \(length) bytes of JSON is longer than the \(maximumLength) bytes an _id may have"
            }
            return nil
        default:
            return "_id must be a non-empty string or object, not \(id.jsonString)"
        }
    }
}
