/// The replicated state of one document: an add-wins map at its root, and the version vector of
/// every event this replica has merged into it.
///
/// A `DocumentState` is also what a delta is: a fragment holding only some entries. Joining is
/// commutative, associative and idempotent, so deltas may arrive in any order, more than once.
/// The document's `_id` and collection live outside it, with whoever keys documents.
public struct DocumentState: Sendable, Hashable {
    public var root: MapNode
    /// Events merged into this state, per site.
    public var version: VersionVector

    public init(root: MapNode = MapNode(), version: VersionVector = .empty) {
        self.root = root
        self.version = version
    }

    /// Whether readers see the document: it was created and not removed, or a field written
    /// concurrently with its removal survived.
    public var isLive: Bool { root.liveOrder != nil }

    /// The fields readers see, as an object; nil when the document is not live.
    public var value: Value? { root.value }

    public var isEmpty: Bool { root.isEmpty }

    /// Merges `other` (a whole state or a delta) into this state.
    public mutating func join(_ other: DocumentState) {
        root.join(other.root)
        version.formUnion(other.version)
    }

    public func joined(_ other: DocumentState) -> DocumentState {
        var result = self
        result.join(other)
        return result
    }

    /// The delta of every event that `version` does not cover; nil when there is none. Joined
    /// into a replica whose state covers `version`, it brings that replica up to this state.
    public func changes(since version: VersionVector) -> DocumentState? {
        guard !self.version.isCovered(by: version) else { return nil }
        guard let root = root.changes(since: version) else { return nil }
        return DocumentState(root: root, version: self.version.subtracting(version))
    }

    /// Calls `body` with every event recorded in the state.
    public func forEachEvent(_ body: (Stamp) -> Void) {
        root.forEachEvent(body)
    }

    /// The version vector computed from the events present in the state.
    public var eventVersion: VersionVector {
        var v = VersionVector()
        forEachEvent { v.observe($0) }
        return v
    }

    /// The slot at `path`, if the state has one.
    public func slot(at path: FieldPath) -> Slot? {
        guard let first = path.components.first else { return nil }
        var slot = root.fields[first]
        for name in path.components.dropFirst() {
            slot = slot?.map?.fields[name]
        }
        return slot
    }
}
