/// A document created by one write and not changed since holds nothing its visible value and
/// that write's stamp do not say: every entry has the same stamp, objects are maps, nothing is
/// removed. A store can keep such a state as its JSON and the stamp, and rebuild it exactly.
extension DocumentState {
    /// The state one upsert of a new document makes: `fields` (without `excluded`) written at
    /// `stamp`, objects as maps. nil when `fields` is empty or nests too deep for a map.
    public init?(creating fields: [String: Value], excluding excluded: String? = nil, at stamp: Stamp) {
        var state = DocumentState()
        guard state.fastCreate(fields, excluding: excluded, stamp: stamp, hints: .objectsAreMaps) != nil else { return nil }
        self = state
    }

    /// The state `init(creating:excluding:at:)` makes of the object `json` holds. Read straight
    /// into cells when the names come in sorted order, as a store writes them: no dictionary
    /// is built and nothing sorted. Any other text takes the general way, with the same result.
    public init?(creatingFromJSON json: String, excluding excluded: String? = nil, at stamp: Stamp) {
        if let state = Self.created(inOrder: json, excluding: excluded, at: stamp) {
            self = state
            return
        }
        guard case .object(let fields)? = try? Value(json: json) else { return nil }
        self.init(creating: fields, excluding: excluded, at: stamp)
    }

    /// The state made from `json` read in one pass; nil when it is not an object whose names
    /// come in strictly increasing order, or when the general way must decide.
    static func created(inOrder json: String, excluding excluded: String?, at stamp: Stamp) -> DocumentState? {
        var json = json
        return json.withUTF8 { bytes -> DocumentState? in
            var reader = JSONReader(bytes: bytes)
            guard reader.nextIsObject() else { return nil }
            var state = DocumentState(version: VersionVector(stamp))
            state.cells.append(Cell(kind: .marker, depth: 0, flag: .present, order: stamp, event: stamp))
            guard (try? state.appendMembers(of: &reader, depth: 0, excluding: excluded, stamp: stamp)) == true, reader.isAtEnd(),
                state.cells.count > 1
            else { return nil }
            return state
        }
    }

    /// Appends the members of the object at `reader` as the fields of a new map at `depth`, as
    /// `fastCreate` does; false at a name out of order, or a map too deep, or one naming
    /// `$binary` other than as binary values are written.
    private mutating func appendMembers(of reader: inout JSONReader, depth: UInt8, excluding excluded: String?, stamp: Stamp) throws -> Bool {
        var previous: String?
        var skipped = false
        return try reader.readMembers { name, _, reader in
            if depth == 0, name == excluded {
                guard !skipped else { return false }
                skipped = true
                _ = try reader.readValue()
                return true
            }
            if let previous, !(previous < name) { return false }
            previous = name
            guard name != Self.binaryKey else { return false }
            names.append(name)
            cells.append(.field(depth: depth, name: UInt32(names.count - 1)))
            if reader.nextIsObject(), !reader.nextObjectStarts(with: "$binary") {
                guard Int(depth) + 1 < Value.maximumNestingDepth else { return false }
                cells.append(Cell(kind: .marker, depth: depth + 1, flag: .present, order: stamp, event: stamp))
                return try appendMembers(of: &reader, depth: depth + 1, excluding: nil, stamp: stamp)
            }
            let value = try reader.readValue()
            // Binary, as JSON writes it, is a value; an object that only names `$binary` a map.
            if case .object = value { return false }
            values.append(value)
            cells.append(Cell(kind: .register, depth: depth, flag: .value, index: UInt32(values.count - 1), order: stamp, event: stamp))
            return true
        }
    }

    /// The event that made the document present, when this state (or delta) holds its root
    /// marker present; nil otherwise.
    public var rootPresence: Stamp? {
        guard let root = cells.first, root.kind == .marker, root.flag == .present else { return nil }
        return root.event
    }

    /// The stamp of every entry when `DocumentState(creating: value's fields, at: stamp)`, with
    /// the value read back from its JSON, rebuilds exactly this state; nil otherwise.
    ///
    /// Conditions: one stamp for every entry and for the version vector; only present maps and
    /// value registers; no register holding an object (it would come back as a map); no name
    /// or object key `$binary` (JSON reads `{"$binary": …}` back as binary).
    public var creationStamp: Stamp? {
        guard cells.count > 1, let stamp = rootPresence, attachments.isEmpty else { return nil }
        guard version.elements.count == 1, version.elements[0].site == stamp.site, version.elements[0].time == stamp.time else {
            return nil
        }
        for cell in cells {
            switch cell.kind {
            case .field:
                if names[Int(cell.index)] == Self.binaryKey { return nil }
            case .marker:
                guard cell.flag == .present, cell.order == stamp, cell.event == stamp else { return nil }
                // `init(creating:)` refuses maps this deep.
                guard cell.depth == 0 || Int(cell.depth) < Value.maximumNestingDepth else { return nil }
            case .register:
                guard cell.flag == .value, cell.order == stamp, cell.event == stamp else { return nil }
                let value = values[Int(cell.index)]
                if case .object = value { return nil }
                guard Self.readsBackFromJSON(value) else { return nil }
            case .contribution, .baseline:
                return nil
            }
        }
        return stamp
    }

    private static let binaryKey = "$binary"

    /// Whether JSON text of `value` reads back as `value` (objects named like binary do not).
    private static func readsBackFromJSON(_ value: Value) -> Bool {
        switch value {
        case .array(let items): return items.allSatisfy(readsBackFromJSON)
        case .object(let fields): return fields[binaryKey] == nil && fields.values.allSatisfy(readsBackFromJSON)
        case .double(let d): return d.isFinite
        default: return true
        }
    }
}
