/// One cell of a document's flat layout.
///
/// A document is stored as its tree in pre-order: a map's marker (if any), then its fields in
/// name order; each field cell is followed by its components — the register, the counter's
/// contributions and baselines (by site), then its nested map's cells one level deeper. Cells
/// are plain data (no references), so copying, scanning and merging them costs no reference
/// counting; names and values live in the document's side tables.
public struct Cell: Sendable, Hashable {
    public enum Kind: UInt8, Sendable {
        /// A map's presence marker (`flag` present or removed).
        case marker
        /// A field of the map at `depth`; `index` names it in the document's names.
        case field
        /// A register (`flag` value, attachment or removed; `index` into values or attachments).
        case register
        /// A counter contribution: `order` = `event` = its stamp; `index` into values (the total).
        case contribution
        /// A counter baseline: `order` = the contribution it removed, `event` the removal;
        /// `index` into values (the removed total).
        case baseline
    }

    public enum Flag: UInt8, Sendable {
        case value = 0, attachment = 1, removed = 2, present = 3
    }

    public var kind: Kind
    /// How many fields deep the map this cell belongs to is; the root map is 0.
    public var depth: UInt8
    public var flag: Flag
    public var index: UInt32
    public var order: Stamp
    public var event: Stamp

    @inline(__always)
    public init(kind: Kind, depth: UInt8, flag: Flag = .value, index: UInt32 = 0, order: Stamp, event: Stamp) {
        self.kind = kind
        self.depth = depth
        self.flag = flag
        self.index = index
        self.order = order
        self.event = event
    }

    /// Field cells carry no stamps.
    @inline(__always)
    public static func field(depth: UInt8, name: UInt32) -> Cell {
        let none = Stamp(time: .zero, site: SiteID(0))
        return Cell(kind: .field, depth: depth, index: name, order: none, event: none)
    }

    @inline(__always)
    public var isRemoved: Bool { flag == .removed }

    /// Whether this cell ends the subtree of a field at `depth` that starts before it.
    @inline(__always)
    public func endsField(at depth: UInt8) -> Bool {
        self.depth < depth || (self.depth == depth && kind == .field)
    }
}
