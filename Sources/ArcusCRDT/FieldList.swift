/// A map's fields, kept sorted by name in one array.
///
/// Maps hold a handful of fields; a binary search over one contiguous array beats hashing, and
/// the name order is what the codec writes and what readers see, so it comes for free.
public struct FieldList: Sendable, Hashable, RandomAccessCollection {
    public struct Field: Sendable, Hashable {
        public var name: String
        public var slot: Slot
    }

    public typealias Element = Field

    /// The fields in name order. Hot loops index it directly (`fields.elements[i].slot.map!`),
    /// which projects in place where a bound copy would retain the slot's contents.
    public private(set) var elements: [Field] = []

    public init() {}

    public init(dictionaryLiteral elements: [(String, Slot)]) {
        for (name, slot) in elements { self[name] = slot }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { elements.count }
    public subscript(position: Int) -> Field { elements[position] }

    public var keys: [String] { elements.map(\.name) }
    public var values: [Slot] { elements.map(\.slot) }

    public mutating func reserveCapacity(_ n: Int) { elements.reserveCapacity(n) }

    @inline(__always)
    private func search(_ name: String) -> (index: Int, found: Bool) {
        var low = 0, high = elements.count
        while low < high {
            let mid = (low &+ high) >> 1
            let candidate = elements[mid].name
            if candidate == name { return (mid, true) }
            if candidate < name { low = mid + 1 } else { high = mid }
        }
        return (low, false)
    }

    public subscript(name: String) -> Slot? {
        get {
            let (i, found) = search(name)
            return found ? elements[i].slot : nil
        }
        set {
            let (i, found) = search(name)
            switch (found, newValue) {
            case (true, let slot?): elements[i].slot = slot
            case (true, nil): elements.remove(at: i)
            case (false, let slot?): elements.insert(Field(name: name, slot: slot), at: i)
            case (false, nil): break
            }
        }
    }

    /// In-place access to the slot named `name`, inserting `defaultValue` first if absent.
    public subscript(name: String, default defaultValue: @autoclosure () -> Slot) -> Slot {
        get { self[name] ?? defaultValue() }
        _modify {
            var (i, found) = search(name)
            if !found {
                elements.insert(Field(name: name, slot: defaultValue()), at: i)
            }
            yield &elements[i].slot
        }
    }

    /// Appends a field whose name sorts after every name present; returns false (and appends
    /// nothing) otherwise. For decoders, whose input must already be in order.
    public mutating func appendInOrder(_ name: String, _ slot: Slot) -> Bool {
        if let last = elements.last, !(last.name < name) { return false }
        elements.append(Field(name: name, slot: slot))
        return true
    }

    public static func == (a: FieldList, b: FieldList) -> Bool {
        a.elements == b.elements
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(elements)
    }
}

extension FieldList: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, Slot)...) {
        self.init(dictionaryLiteral: elements)
    }
}
