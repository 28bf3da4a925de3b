/// The CRDT types a field can have.
public enum FieldType: String, Sendable, Hashable, CaseIterable {
    /// Last write wins; any value, arrays and objects included, replaced whole.
    case register = "REGISTER"
    /// Add-wins map; fields merge one by one.
    case map = "MAP"
    /// Increments from every replica add up.
    case counter = "PN_COUNTER"
    /// A token for a blob fetched on demand (last write wins).
    case attachment = "ATTACHMENT"
}

/// How written values map to field types: a JSON object becomes a MAP unless the hints name its
/// path as a REGISTER (or the default says otherwise); everything else is a REGISTER.
public struct TypeHints: Sendable, Hashable {
    public var objects: FieldType
    public var fields: [FieldPath: FieldType]

    public init(objects: FieldType = .map, fields: [FieldPath: FieldType] = [:]) {
        self.objects = objects
        self.fields = fields
    }

    /// Objects are maps (the trace format's rule and Arcus's default).
    public static let objectsAreMaps = TypeHints()

    func storesAsMap(_ value: Value, at path: FieldPath) -> Bool {
        guard case .object = value else { return false }
        return (type(at: path) ?? objects) == .map
    }

    /// The hinted type at `path`, skipping the lookup (and its hashing) when there are no hints.
    @inline(__always)
    func type(at path: FieldPath) -> FieldType? {
        fields.isEmpty ? nil : fields[path]
    }

    @inline(__always)
    func type(at path: [String]) -> FieldType? {
        fields.isEmpty ? nil : fields[FieldPath(path)]
    }
}

/// How an upsert treats a document that may already exist.
public enum WriteStrategy: String, Sendable, Hashable, CaseIterable {
    /// Merge the given fields into the document, creating it if absent (the default).
    case merge
    /// Write only when the document does not exist locally; otherwise do nothing.
    case insertIfAbsent
    /// Like `insertIfAbsent`, but the fields are default data: ordered at clock zero, so any
    /// real write on any replica wins over them, and replicas loading the same defaults never
    /// overwrite later edits.
    case insertDefaultIfAbsent
    /// Merge, but write only fields whose value differs from what is stored, so unchanged
    /// fields cost nothing to sync.
    case updateDifferentOnly
}
