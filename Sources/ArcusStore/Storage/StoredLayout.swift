/// How a row's encoded `state` column is laid out: the state encoded whole, then the deltas
/// appended to it since (`DocumentRows.append`).
///
/// Appending saves re-encoding a whole document for every change to it; rewriting it whole once
/// the deltas add up to its own size (or to `maximumParts` of them) keeps a row within about
/// twice its size and its reading within a few joins.
struct StoredLayout: Sendable, Hashable {
    /// Deltas a row may carry before it is rewritten whole.
    static let maximumParts = 16
    /// What a small document may append regardless of its size.
    static let minimumAllowance = 256

    /// The bytes of the whole state the row starts with.
    private(set) var whole: Int
    /// The bytes of the deltas appended since, and how many.
    private(set) var appendedBytes = 0
    private(set) var parts = 0

    init(whole: Int) {
        self.whole = whole
    }

    /// The `state` column's bytes.
    var bytes: Int { whole + appendedBytes }

    /// Whether a delta of `count` bytes may be appended rather than the state rewritten.
    func admits(_ count: Int) -> Bool {
        parts < Self.maximumParts && appendedBytes + count <= max(whole, Self.minimumAllowance)
    }

    mutating func appended(_ count: Int) {
        appendedBytes += count
        parts += 1
    }
}
