import ArcusCRDT
import ArcusStore

/// The local HTTP API's JSON bodies (`Value(jsonBytes:)`, then the fields the agent's routes take:
/// `AgentHTTPAPI.jsonObject`, `string(_:_:)`, `object(_:_:)` read "statement", "query" and "args"
/// the same way): what any local program, and before issue 17 any web page, can post. JSON that
/// parses prints as JSON that parses to the same value; a body's statement runs against the fuzz
/// store (`/v1/execute`), its query parses as a subscription (`/v1/subscriptions`).
enum HTTPBodyTarget {
    static let target = FuzzTarget(
        name: "http-json", entryPoint: "ArcusCRDT: Value(jsonBytes:); the agent's body fields; Store.execute; SubscriptionQuery(_:arguments:)",
        run: run, seeds: seeds
    )

    static func run(_ bytes: [UInt8]) {
        guard let value = try? Value(jsonBytes: bytes) else { return }
        let text = value.jsonString
        FuzzCheck.expect((try? Value(json: text)) == value, "JSON printed from a parsed value does not parse back to it: \(text.prefix(200))")
        guard case .object(let body) = value else { return }
        // As the routes read their fields: "args" absent or null is no arguments; anything but an
        // object is refused.
        let arguments: [String: Value]
        switch body["args"] {
        case nil, .null?: arguments = [:]
        case .object(let object)?: arguments = object
        default: return
        }
        if case .string(let statement)? = body["statement"], let parsed = try? DQLParser.parse(statement) {
            FuzzStore.execute(statement, statement: parsed, arguments: arguments)
        }
        if case .string(let query)? = body["query"] {
            _ = try? SubscriptionQuery(query, arguments: arguments)
        }
    }

    static func seeds() -> [[UInt8]] {
        [
            #"{"statement": "SELECT * FROM cars WHERE color = :color", "args": {"color": "red"}}"#,
            #"{"statement": "INSERT INTO cars DOCUMENTS (:doc)", "args": {"doc": {"_id": "x", "n": [1, 2.5, -3e10, true, null]}}}"#,
            #"{"statement": "UPDATE cars SET owner.name = 'zoe' WHERE _id = 'c1'"}"#,
            #"{"query": "SELECT * FROM orders WHERE total > :min", "args": {"min": 10}}"#,
            #"{"query": ""}"#,
            #"{"blob": {"$binary": "AAECAwQ="}, "s": "\u00e9\ud83d\ude00\n\t\"", "deep": [[[[{"a": {}}]]]]}"#,
            #"[1, 2, 3]"#,
            #"123456789012345678901234567890"#,
        ].map { Array($0.utf8) }
    }
}
