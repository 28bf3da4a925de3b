import ArcusCRDT

/// What a statement returns: the documents (or projections) it selected, and the `_id`s of the
/// documents it changed.
public struct QueryResult: Sendable, Hashable {
    public var items: [Value]
    public var mutatedDocumentIDs: [Value]

    public init(items: [Value] = [], mutatedDocumentIDs: [Value] = []) {
        self.items = items
        self.mutatedDocumentIDs = mutatedDocumentIDs
    }

    /// `{"items": […], "mutatedDocumentIDs": […]}`, the form `arcus exec` and the HTTP API print.
    public var jsonString: String {
        Value.object(["items": .array(items), "mutatedDocumentIDs": .array(mutatedDocumentIDs)]).jsonString
    }
}
