/// Names one document: its collection and its `_id` (a string or a JSON object).
public struct DocumentKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var collection: String
    public var id: Value

    public init(collection: String, id: Value) {
        self.collection = collection
        self.id = id
    }

    public init(_ collection: String, _ id: String) {
        self.collection = collection
        self.id = .string(id)
    }

    /// The `_id` as text: the string itself, or the object's canonical JSON.
    public var idText: String {
        if case .string(let s) = id { return s }
        return id.jsonString
    }

    public static func < (lhs: DocumentKey, rhs: DocumentKey) -> Bool {
        if lhs.collection != rhs.collection { return lhs.collection < rhs.collection }
        if case .string(let a) = lhs.id, case .string(let b) = rhs.id { return a < b }
        return lhs.idText < rhs.idText
    }

    public var description: String { "\(collection)/\(idText)" }
}
