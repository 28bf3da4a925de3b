/// The collections a permission covers: every collection, or those named.
public enum CollectionSet: Sendable, Hashable, CustomStringConvertible {
    case all
    case named(Set<String>)

    /// No collection.
    public static let none = CollectionSet.named([])

    /// The set a list of names means, as the command line and certificates spell it: "*" alone,
    /// or among the names, means every collection.
    public init(_ names: some Sequence<String>) {
        let names = Set(names)
        self = names.contains("*") ? .all : .named(names)
    }

    public func contains(_ collection: String) -> Bool {
        switch self {
        case .all: return true
        case .named(let names): return names.contains(collection)
        }
    }

    /// The names as certificates list them: ["*"] for every collection, otherwise sorted, so
    /// that the same set always encodes (and is signed) the same way.
    public var names: [String] {
        switch self {
        case .all: return ["*"]
        case .named(let names): return names.sorted()
        }
    }

    public var description: String { names.isEmpty ? "none" : names.joined(separator: ",") }
}

/// What a peer may do with each collection: read (be sent its documents) and write (have its
/// changes accepted). The sync engine enforces them; the mesh only carries them.
public struct CollectionPermissions: Sendable, Hashable, CustomStringConvertible {
    public var read: CollectionSet
    public var write: CollectionSet

    public init(read: CollectionSet, write: CollectionSet) {
        self.read = read
        self.write = write
    }

    /// Everything: what a peer proving membership with the shared mesh secret gets.
    public static let full = CollectionPermissions(read: .all, write: .all)

    public var description: String { "read \(read), write \(write)" }
}
