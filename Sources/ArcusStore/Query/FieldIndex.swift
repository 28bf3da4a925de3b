import ArcusCRDT
import GRDB

/// A field index (`CREATE INDEX name ON coll (path, …)`): a SQLite expression index on the
/// document JSON at each path, which the planner uses for equality and range predicates.
public struct FieldIndex: Sendable, Hashable {
    public var name: String
    public var collection: String
    public var paths: [FieldPath]

    /// The SQLite expression for a path: `json_extract(json, '$."a"."b"')`. Queries must use
    /// the same text for SQLite to match the index.
    static func expression(for path: FieldPath) -> String {
        "json_extract(json, " + jsonPath(path) + ")"
    }

    /// `json_type(json, '$."a"."b"')`: the JSON kind of the value at the path.
    static func typeExpression(for path: FieldPath) -> String {
        "json_type(json, " + jsonPath(path) + ")"
    }

    private static func jsonPath(_ path: FieldPath) -> String {
        "'$" + path.components.map { ".\"" + $0 + "\"" }.joined() + "'"
    }

    static func checkIndexable(_ path: FieldPath) throws {
        for name in path.components where name.contains("\"") || name.contains("'") || name.isEmpty {
            throw StoreError.invalidQuery("field \(path) cannot be indexed: index paths may not contain quotes or empty names")
        }
    }

    /// A SQLite identifier made from the index name: ASCII letters, digits and underscores.
    var sqliteName: String {
        "arcus_index_" + name.unicodeScalars.map { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)) ? String(scalar) : "_"
        }.joined()
    }

    func create(_ db: Database) throws {
        // The collection, then the expressions: each entry carries the row's rowid, which leads
        // to the document, and a count within one collection needs only the index.
        let columns = (["collection"] + paths.map(Self.expression(for:))).joined(separator: ", ")
        try db.execute(sql: "CREATE INDEX IF NOT EXISTS \"\(sqliteName)\" ON document (\(columns))")
        try db.execute(sql: "INSERT OR REPLACE INTO field_index (name, collection, paths) VALUES (?, ?, ?)",
                       arguments: [name, collection, Value.array(paths.map { .array($0.components.map(Value.string)) }).jsonString])
    }

    func drop(_ db: Database) throws {
        try db.execute(sql: "DROP INDEX IF EXISTS \"\(sqliteName)\"")
        try db.execute(sql: "DELETE FROM field_index WHERE name = ?", arguments: [name])
    }

    static func all(_ db: Database) throws -> [FieldIndex] {
        try Row.fetchAll(db, sql: "SELECT name, collection, paths FROM field_index").compactMap { row in
            guard case .array(let items)? = try? Value(json: row["paths"] as String) else { return nil }
            let paths = items.compactMap { item -> FieldPath? in
                guard case .array(let names) = item else { return nil }
                return FieldPath(names.compactMap(\.stringValue))
            }
            return FieldIndex(name: row["name"], collection: row["collection"], paths: paths)
        }
    }
}

