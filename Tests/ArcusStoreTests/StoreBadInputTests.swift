import ArcusCRDT
import ArcusCodec
import Foundation
import Testing
@testable import ArcusStore

/// Bad input gets a clear error and leaves the store exactly as it was.
@Suite("Bad input")
struct StoreBadInputTests {
    /// A store holding one document, and a fingerprint of everything in it.
    static func seeded() throws -> TemporaryStore {
        let t = try TemporaryStore()
        try t.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'a', 'make': 'toyota', 'owner': {'name': 'ann'}})")
        return t
    }

    static func fingerprint(_ store: Store) throws -> (items: [Value], sequence: Int64) {
        (try store.execute("SELECT * FROM cars ORDER BY _id").items, store.changeSequence)
    }

    static func expectUnchanged(_ t: TemporaryStore, _ before: (items: [Value], sequence: Int64),
                                sourceLocation: SourceLocation = #_sourceLocation) throws {
        let after = try fingerprint(t.store)
        #expect(after.items == before.items, "the store changed", sourceLocation: sourceLocation)
        #expect(after.sequence == before.sequence, "the change log moved", sourceLocation: sourceLocation)
    }

    /// A value nested `levels` deep: {"n": {"n": … 1}}.
    static func nested(_ levels: Int) -> Value {
        var value: Value = 1
        for _ in 0..<levels { value = .object(["n": value]) }
        return value
    }

    @Test("malformed DQL names the line and column and writes nothing", arguments: [
        ("SELEC * FROM cars", 1, 1),
        ("INSERT INTO cars DOCUMENTS ({'_id': 'b', 'x': 1}),\n  ({'_id': 'c', 'x': })", 2, 22),
        ("UPDATE cars SET make = 'ford' WHERE", 1, 36),
        ("DELETE FROM cars WHERE make = 'toyota' AND AND", 1, 44),
        ("SELECT * FROM cars WHERE make LIKE", 1, 35),
    ])
    func malformed(statement: String, line: Int, column: Int) throws {
        let t = try Self.seeded()
        let before = try Self.fingerprint(t.store)
        let error = try #require(throws: DQLError.self) { try t.store.execute(statement) }
        #expect(error.line == line && error.column == column, "\(error)")
        #expect(error.description.hasPrefix("line \(line), column \(column): "))
        try Self.expectUnchanged(t, before)
    }

    @Test("a collection named with a control character, nothing, or more than 256 bytes is refused whichever way the document comes, and nothing is written", arguments: [
        "a\u{1}b", "line\nbreak", "del\u{7F}", "c1\u{85}", "", String(repeating: "x", count: 257),
    ])
    func badCollectionName(name: String) throws {
        let t = try Self.seeded()
        let before = try Self.fingerprint(t.store)
        let statement = "INSERT INTO `\(name)` DOCUMENTS ({'_id': 'x'})"
        if !name.isEmpty {
            let error = try #require(throws: StoreError.self) { try t.store.execute(statement) }
            #expect(error.description.contains("collection"), "\(error)")
        }
        #expect(throws: StoreError.self) { try t.store.collection(name).upsert(["_id": "x", "n": 1]) }
        // A peer's delta: the whole batch is refused, its good document too.
        var state = DocumentState()
        _ = state.set(["n"], to: 1, at: Stamp(time: Timestamp(milliseconds: 1, logical: 0), site: SiteID(7)), hints: TypeHints())
        #expect(throws: StoreError.self) {
            try t.store.merge(DeltaBatch(documents: [
                DocumentDelta(key: DocumentKey(collection: "cars", id: "y"), state: state),
                DocumentDelta(key: DocumentKey(collection: name, id: "z"), state: state),
            ]))
        }
        try Self.expectUnchanged(t, before)
        #expect(try t.store.execute("SELECT * FROM `ok name, with spaces` ").items == [])
        try t.store.execute("INSERT INTO `ok name, with spaces` DOCUMENTS ({'_id': 'x'})")
        #expect(CollectionName.problem("ok name, with spaces") == nil && CollectionName.problem(String(repeating: "é", count: 128)) == nil)
    }

    @Test("a missing argument is an error naming it, before anything is written")
    func missingArgument() throws {
        let t = try Self.seeded()
        let before = try Self.fingerprint(t.store)
        let insert = try #require(throws: DQLError.self) {
            try t.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'b'}), (:doc)")
        }
        #expect(insert.kind == .missingArgument && insert.message.contains("doc"), "\(insert)")
        let update = try #require(throws: DQLError.self) {
            try t.store.execute("UPDATE cars SET make = :make WHERE _id = 'a'", arguments: ["mak": "ford"])
        }
        #expect(update.kind == .missingArgument && update.message.contains("make"), "\(update)")
        #expect(throws: DQLError.self) { try t.store.registerObserver("SELECT * FROM cars WHERE make = :make") { _ in } }
        try Self.expectUnchanged(t, before)
    }

    @Test("values JSON cannot carry are refused by every API")
    func nonJSONValues() throws {
        let t = try Self.seeded()
        let before = try Self.fingerprint(t.store)
        for bad: Value in [.double(.nan), .double(.infinity), ["deep": [1, .double(-.infinity)]]] {
            #expect(throws: StoreError.self) { try t.store.collection("cars").upsert(["_id": "b", "x": bad]) }
            #expect(throws: StoreError.self) {
                try t.store.execute("INSERT INTO cars DOCUMENTS (:doc)", arguments: ["doc": ["_id": "b", "x": bad]])
            }
            #expect(throws: StoreError.self) {
                try t.store.execute("UPDATE cars SET x = :x WHERE _id = 'a'", arguments: ["x": bad])
            }
            #expect(throws: StoreError.self) {
                try t.store.collection("cars").findByID("a").update { doc in doc["x"].set(bad) }
            }
        }
        #expect(throws: StoreError.self) {
            try t.store.collection("cars").findByID("a").update { doc in doc["n"].replaceWithCounter().increment(by: Double.nan) }
        }
        // An INSERT document must be an object.
        #expect(throws: DQLError.self) { try t.store.execute("INSERT INTO cars DOCUMENTS (:doc)", arguments: ["doc": 5]) }
        #expect(throws: DQLError.self) { try t.store.execute("INSERT INTO cars DOCUMENTS ('a string')") }
        try Self.expectUnchanged(t, before)
    }

    @Test("nesting deeper than 64 levels is refused; 64 is fine")
    func nestingLimit() throws {
        #expect(Value.maximumNestingDepth == 64)
        let t = try Self.seeded()
        let before = try Self.fingerprint(t.store)
        // The document itself is level one, so a field may hold 63 more.
        let tooDeep = Self.nested(64)
        #expect(throws: StoreError.self) { try t.store.collection("cars").upsert(["_id": "b", "x": tooDeep]) }
        #expect(throws: (any Error).self) {
            try t.store.execute("INSERT INTO cars DOCUMENTS ({'_id': 'b'}), (:doc)", arguments: ["doc": ["_id": "c", "x": tooDeep]])
        }
        #expect(throws: StoreError.self) {
            try t.store.execute("UPDATE cars SET owner.x = :x WHERE _id = 'a'", arguments: ["x": Self.nested(63)])
        }
        #expect(throws: StoreError.self) {
            try t.store.collection("cars").findByID("a").update { doc in doc["owner"]["x"].set(Self.nested(63)) }
        }
        try Self.expectUnchanged(t, before)

        try t.store.collection("cars").upsert(["_id": "b", "x": Self.nested(63)])
        let stored = try #require(try t.store.collection("cars").findByID("b").exec())
        #expect(stored.nestingDepth == 64)
    }

    @Test("changing _id is refused by DQL and by the builder; nothing is written")
    func changedID() throws {
        let t = try Self.seeded()
        let before = try Self.fingerprint(t.store)
        for statement in ["UPDATE cars SET _id = 'b' WHERE _id = 'a'", "UPDATE cars SET _id.x = 1", "UPDATE cars UNSET _id"] {
            let error = try #require(throws: DQLError.self) { try t.store.execute(statement) }
            #expect(error.message.contains("_id"), "\(error)")
        }
        let builder = try #require(throws: StoreError.self) {
            try t.store.collection("cars").findByID("a").update { doc in
                doc["make"].set("ford")  // a good change in the same closure is not kept either
                doc["_id"].set("b")
            }
        }
        #expect("\(builder)".contains("the _id of a document cannot be changed"))
        #expect(throws: StoreError.self) { try t.store.collection("cars").findByID("a").update { doc in doc["_id"].remove() } }
        // Inside a transaction, the refusal rolls back the writes before it.
        #expect(throws: StoreError.self) {
            try t.store.write { tx in
                try tx.upsert(["_id": "z", "make": "kia"], into: "cars")
                try tx.upsert(["_id": "a", "n": .double(.nan)], into: "cars")
            }
        }
        try Self.expectUnchanged(t, before)
    }

    @Test("an _id longer than 1 KiB is refused by DQL, by a transaction and from a peer; 1 KiB is fine")
    func longID() throws {
        let t = try Self.seeded()
        let before = try Self.fingerprint(t.store)
        let long = String(repeating: "k", count: 1025)
        let statement = try #require(throws: StoreError.self) {
            try t.store.execute("INSERT INTO cars DOCUMENTS (:doc)", arguments: ["doc": ["_id": .string(long), "make": "kia"]])
        }
        #expect("\(statement)".contains("an _id of 1025 bytes is longer than the 1024 bytes an _id may have"), "\(statement)")
        #expect(throws: StoreError.self) { try t.store.write { tx in _ = try tx.upsert(["_id": .string(long)], into: "cars") } }
        let object: Value = ["part": .string(String(repeating: "p", count: 1020))]
        #expect(throws: StoreError.self) { try t.store.write { tx in _ = try tx.upsert(["_id": object], into: "cars") } }
        // A delta from elsewhere with such a key is not merged either.
        var state = DocumentState()
        _ = state.upsert(["make": "kia"], at: Stamp(time: Timestamp(milliseconds: 5), site: SiteID(77)))
        #expect(throws: StoreError.self) {
            try t.store.merge(DeltaBatch(documents: [DocumentDelta(key: DocumentKey("cars", long), state: state)]))
        }
        try Self.expectUnchanged(t, before)
        let longest = String(repeating: "k", count: 1024)
        try t.store.execute("INSERT INTO cars DOCUMENTS (:doc)", arguments: ["doc": ["_id": .string(longest), "make": "kia"]])
        #expect(try t.store.collection("cars").findByID(.string(longest)).exec() != nil)
    }
}
