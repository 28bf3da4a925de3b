import ArcusCRDT
import ArcusCodec

/// What every value written into a document must satisfy, whichever API wrote it: JSON can
/// carry it (no NaN or infinity), it nests no deeper than `Value.maximumNestingDepth` counted
/// from the document's root, and it leaves `_id` alone.
enum DocumentValidation {
    /// The fields of a document being upserted or inserted (its `_id` already taken out).
    static func check(_ fields: [String: Value], excluding excluded: String? = nil) throws {
        for (name, value) in fields where name != excluded {
            switch value {
            // A finite scalar under a name other than _id is fine: no path to build.
            case .null, .bool, .int, .string, .binary: if name == "_id" { try checkPath(FieldPath([name])) }
            case .double(let d) where d.isFinite: if name == "_id" { try checkPath(FieldPath([name])) }
            default: try check(value, at: FieldPath([name]))
            }
        }
    }

    /// A value about to be written at `path` inside a document.
    static func check(_ value: Value, at path: FieldPath) throws {
        try checkPath(path)
        let depth = try depthOfFiniteValue(value, at: path)
        guard path.components.count + depth <= Value.maximumNestingDepth else {
            throw StoreError.invalidDocument("\(path) would nest deeper than \(Value.maximumNestingDepth) levels, the most a document may")
        }
    }

    /// A path about to be written or removed.
    static func checkPath(_ path: FieldPath) throws {
        guard path.components.first != "_id" else {
            throw StoreError.invalidDocument("the _id of a document cannot be changed; write a new document with the new _id instead")
        }
        guard path.components.count <= Value.maximumNestingDepth else {
            throw StoreError.invalidDocument("\(path) is deeper than \(Value.maximumNestingDepth) levels, the most a document may nest")
        }
    }

    /// The nesting depth, refusing numbers JSON cannot carry; stops descending past the limit.
    private static func depthOfFiniteValue(_ value: Value, at path: FieldPath, level: Int = 0) throws -> Int {
        guard level <= Value.maximumNestingDepth else { return level }
        switch value {
        case .double(let d) where !d.isFinite:
            throw StoreError.invalidDocument("\(path) holds \(d), which JSON cannot carry; use null or a finite number")
        case .array(let items):
            var deepest = 0
            for item in items { deepest = max(deepest, try depthOfFiniteValue(item, at: path, level: level + 1)) }
            return 1 + deepest
        case .object(let fields):
            var deepest = 0
            for (_, field) in fields { deepest = max(deepest, try depthOfFiniteValue(field, at: path, level: level + 1)) }
            return 1 + deepest
        default:
            return 0
        }
    }
}

extension DocumentValidation {
    /// A delta from elsewhere (a peer): its `_id` is one this store could have written, and
    /// nothing in it nests deeper than a document may.
    static func check(delta: DocumentState, key: DocumentKey) throws {
        if let problem = DocumentIDRules.problem(with: key.id) {
            throw StoreError.invalidDocument("a change to a document of \(key.collection) was not merged: \(problem)")
        }
        let limit = Value.maximumNestingDepth
        for cell in delta.cells {
            // A field at cell depth d has a path of d + 1 names; a map there adds a level.
            var depth = Int(cell.depth) + 2
            if cell.kind == .register, cell.flag == .value, Int(cell.index) < delta.values.count {
                depth = Int(cell.depth) + 1 + delta.values[Int(cell.index)].nestingDepth
            }
            guard depth <= limit else {
                throw StoreError.invalidDocument("a change to \(key.collection)/\(key.storageID) nests deeper than \(limit) levels; it was not merged")
            }
        }
    }
}
