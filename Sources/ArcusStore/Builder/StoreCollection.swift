import ArcusCRDT

extension Store {
    /// A collection, for the builder API: `store.collection("cars").find("color == $args.color",
    /// args: ["color": "blue"]).exec()`. Collections need no creation.
    public func collection(_ name: String) -> StoreCollection { StoreCollection(store: self, name: name) }
}

/// One collection of a store.
public struct StoreCollection: Sendable {
    let store: Store
    public let name: String

    /// The documents a DQL condition matches (`"color == $args.color"` or `"color = :color"`).
    public func find(_ condition: String, args: [String: Value] = [:]) -> PendingQuery {
        PendingQuery(collection: self, condition: .text(condition), arguments: args)
    }

    public func findAll() -> PendingQuery { PendingQuery(collection: self, condition: nil, arguments: [:]) }

    public func findByID(_ id: Value) -> PendingIDQuery { PendingIDQuery(collection: self, id: id) }

    /// Merges `document` in (creating it when absent) with `writeStrategy`; returns its `_id`.
    @discardableResult
    public func upsert(_ document: [String: Value], writeStrategy: WriteStrategy = .merge, hints: TypeHints = .objectsAreMaps) throws -> Value {
        var id: Value = .null
        try store.write { transaction in
            id = try transaction.upsert(document, into: name, strategy: writeStrategy, hints: hints)
        }
        return id
    }
}
