/// The names of nested map fields from a document's root to one field: `["owner", "address"]`.
///
/// An empty path names the document itself.
public struct FieldPath: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var components: [String]

    public init(_ components: [String]) { self.components = components }

    /// Splits a dotted path such as `"owner.address"`. Field names that contain a dot cannot be
    /// written this way; pass the components instead.
    public init(dotted: String) {
        components = dotted.isEmpty ? [] : dotted.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    public static let root = FieldPath([])

    public var isRoot: Bool { components.isEmpty }
    public var last: String? { components.last }
    public var parent: FieldPath { FieldPath(Array(components.dropLast())) }

    public func appending(_ name: String) -> FieldPath { FieldPath(components + [name]) }

    public func hasPrefix(_ other: FieldPath) -> Bool { components.starts(with: other.components) }

    public var description: String { components.joined(separator: ".") }

    public static func < (lhs: FieldPath, rhs: FieldPath) -> Bool {
        lhs.components.lexicographicallyPrecedes(rhs.components)
    }
}

extension FieldPath: ExpressibleByStringLiteral, ExpressibleByArrayLiteral {
    public init(stringLiteral value: String) { self.init(dotted: value) }
    public init(arrayLiteral elements: String...) { self.init(elements) }
}
