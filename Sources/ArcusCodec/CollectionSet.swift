/// The collections a permission covers: every collection, or those named. Certificates carry
/// them (ArcusMesh) and the sync engine enforces them (ArcusSync's `SyncPermissions`), so the
/// one type lives where both may look.
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

    /// Whether every collection this set holds, `other` holds too.
    public func isSubset(of other: CollectionSet) -> Bool {
        switch (self, other) {
        case (_, .all): return true
        case (.all, .named): return false
        case (.named(let mine), .named(let theirs)): return mine.isSubset(of: theirs)
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
