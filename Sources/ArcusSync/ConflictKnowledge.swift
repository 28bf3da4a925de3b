/// What the conflict view asks of sync (see `FieldConflicts` in the store, and Docs/Conflicts.md).
///
/// To tell whether a write that overwrote one of its values had seen that value, a store needs
/// to know what the writer had seen of its own events; the version of a delta leaves the
/// receiver's own entry out (it has them all). Peers whose hellos both list `capability` put it
/// back: each served document's version carries, for the receiver's site, what the server had
/// seen of the receiver's events there (`Store.conflictKnowledge`). A store that keeps no
/// conflicts does not list it, and neither pays for the entry.
enum ConflictKnowledge {
    static let capability = "conflicts"
}
