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

    /// The stamp of every entry when `DocumentState(creating: value's fields, at: stamp)`, with
    /// the value read back from its JSON, rebuilds exactly this state; nil otherwise.
    ///
    /// Conditions: one stamp for every entry and for the version vector; only present maps and
    /// value registers; no register holding an object (it would come back as a map); no name
    /// or object key `$binary` (JSON reads `{"$binary": …}` back as binary).
    public var creationStamp: Stamp? {
        guard cells.count > 1, cells[0].kind == .marker, cells[0].flag == .present, attachments.isEmpty else { return nil }
        let stamp = cells[0].event
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
