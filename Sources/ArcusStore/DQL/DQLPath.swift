import ArcusCRDT

/// One step of a path into a document: a field of an object or an element of an array.
public enum DQLPathStep: Sendable, Hashable {
    case field(String)
    /// A 0-based array index. Indices are never negative.
    case index(Int)
}

/// A path from the document root (or from a computed value): `a`, `a.b.c`, `a['b c']`, `a[0]`.
///
/// Steps are resolved once at parse time, so evaluating a path is a loop of dictionary and
/// array lookups with no string work.
public struct DQLPath: Sendable, Hashable, CustomStringConvertible {
    public var steps: [DQLPathStep]

    public init(_ steps: [DQLPathStep]) { self.steps = steps }

    public init(_ fieldPath: FieldPath) { steps = fieldPath.components.map { .field($0) } }

    /// The path as a `FieldPath` when every step is a field name; `nil` when it indexes an array.
    public var fieldPath: FieldPath? {
        var names: [String] = []
        names.reserveCapacity(steps.count)
        for step in steps {
            guard case .field(let name) = step else { return nil }
            names.append(name)
        }
        return FieldPath(names)
    }

    /// The name a projection of this path gets: its last field name, if the last step is a field.
    public var lastFieldName: String? {
        if case .field(let name)? = steps.last { return name }
        return nil
    }

    /// The value at this path inside `value`, or `nil` (MISSING) when a step finds no field, an
    /// index is out of bounds, or a step goes into a value of the wrong kind.
    public func resolve(in value: Value) -> Value? {
        DQLPath.resolve(steps, in: value)
    }

    /// Written so that the first step reads from the borrowed `value` without copying it, and
    /// each later step copies only the value it steps into (this loop is the hot path of WHERE).
    static func resolve(_ steps: [DQLPathStep], in value: Value) -> Value? {
        guard let first = steps.first else { return value }
        guard var current = step(first, value) else { return nil }
        var i = 1
        while i < steps.count {
            guard let next = step(steps[i], current) else { return nil }
            current = next
            i += 1
        }
        return current
    }

    @inline(__always)
    private static func step(_ step: DQLPathStep, _ value: Value) -> Value? {
        switch step {
        case .field(let name):
            guard case .object(let fields) = value else { return nil }
            return fields[name]
        case .index(let i):
            guard case .array(let items) = value, i >= 0, i < items.count else { return nil }
            return items[i]
        }
    }

    /// DQL text for the path: bare names where the lexer would read them back as names,
    /// backquotes otherwise, `[n]` for indices.
    public var description: String {
        var out = ""
        for (i, step) in steps.enumerated() {
            switch step {
            case .field(let name):
                if i > 0 { out += "." }
                out += DQLPath.quotedName(name, first: i == 0)
            case .index(let n):
                out += "[\(n)]"
            }
        }
        return out
    }

    /// `name` as it must be written in DQL: bare when it is a plain identifier (and, as the first
    /// step, not a reserved keyword), else in backquotes.
    static func quotedName(_ name: String, first: Bool) -> String {
        if isPlainName(name), !(first && DQLKeyword(rawValue: name.uppercased())?.isReserved == true) {
            return name
        }
        return "`" + name.replacingBackquotes() + "`"
    }

    static func isPlainName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(first >= 0x30 && first <= 0x39) else { return false }
        for b in name.utf8 {
            let letter = (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A
            guard letter || (b >= 0x30 && b <= 0x39) || b == UInt8(ascii: "_") else { return false }
        }
        return true
    }
}

extension String {
    fileprivate func replacingBackquotes() -> String {
        var out = ""
        for c in unicodeScalars {
            if c == "`" { out += "``" } else { out.unicodeScalars.append(c) }
        }
        return out
    }
}
