import ArcusCRDT

/// The encoding of a `DocumentState` (a whole document or a delta):
///
///     document  := head, stamp* (ascending), [knowledge], [root marker stamps], field*
///     head      := varint: bit 0 knowledge present; bits 1–2 the stamp count, or 3 and a varint
///                  (count − 3) after the head; bits 3–4 the root's marker kind; bits 5… the
///                  root's field count
///     knowledge := count, (stamp index)* — version vector entries that the events do not imply
///     map       := varint(fieldCount << 2 | markerKind), [marker stamps], field*
///     field     := see `FieldEntry`; in the general form a name, then
///     slot      := header byte, [register], [map], [counter]
///
/// Every stamp of the document is listed once; entries name stamps by their index in that
/// list, usually inside the slot's header byte. Fields are written in name order.
///
/// Slot header: bit 0 register, bit 1 map, bit 2 counter; bits 3–5 the register's kind (0 value,
/// 1 value with its own event, 2 attachment, 3 attachment with its own event, 4 removed); bits
/// 6–7 the register's order index when below 3, else 3 and a varint (index − 3) follows.
/// Marker kinds: 0 none, 1 present, 2 present with its own event, 3 removed.
enum SlotBits {
    static let register: UInt8 = 1, map: UInt8 = 2, counter: UInt8 = 4
    static let kindShift: UInt8 = 3, orderShift: UInt8 = 6
}

/// The first byte of each field in a map:
///
///     1nnnnnoo   a register-only field holding a value written with one stamp: name index n
///                (below 32), order index o (below 4); the value follows
///     01nnnnoo   a register-only field removed by the document's latest stamp: name index n
///                (below 16), the removed value's order index o (below 4)
///     001nnnnn   a counter-only field with one contribution, made at the document's latest
///                stamp: name index n (below 32); the total follows
///     000xxxxx   the general form: the name (see `writeFieldEntryName`), then the slot header
enum FieldEntry {
    static let compactValue: UInt8 = 0x80
    static let compactRemoved: UInt8 = 0x40
    static let compactCounter: UInt8 = 0x20
}

enum RegisterKind: UInt8 {
    case value = 0, valueWithEvent, attachment, attachmentWithEvent, removed
}

