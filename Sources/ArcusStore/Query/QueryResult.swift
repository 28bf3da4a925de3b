import ArcusCRDT

/// What a statement returns: the documents (or projections) it selected, and the `_id`s of the
/// documents it changed.
public struct QueryResult: Sendable, Hashable {
    public var items: [Value]
    public var mutatedDocumentIDs: [Value]
    /// For a statement that changed documents, its commit: the change-log position of the last
    /// change it made. Every change at or before it is committed; a peer that acknowledged this
    /// store's log up to the positions the documents' rows are at has them (`writtenDocuments`).
    public var commitID: Int64?
    /// The documents the statement wrote (not those it evicted: an eviction is local).
    public var writtenDocuments: [DocumentKey] = []

    public init(items: [Value] = [], mutatedDocumentIDs: [Value] = []) {
        self.items = items
        self.mutatedDocumentIDs = mutatedDocumentIDs
    }

    /// `{"items": […], "mutatedDocumentIDs": […]}`, with `"commit_id"` after a write that changed
    /// something: the form `arcus exec` and the HTTP API print.
    public var json: [String: Value] {
        var fields: [String: Value] = ["items": .array(items), "mutatedDocumentIDs": .array(mutatedDocumentIDs)]
        if let commitID { fields["commit_id"] = .int(commitID) }
        return fields
    }

    public var jsonString: String { Value.object(json).jsonString }
}
