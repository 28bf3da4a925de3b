import ArcusCRDT
import ArcusCodec
import Foundation
import Testing
@testable import ArcusStore

/// A merged document whose creation the store has not seen is written without first looking
/// for its row (`WriteTransaction.merge`). These check that the shortcut changes nothing a
/// reader can see: the row that exists after all is joined, the log has no hole, and the
/// documents cached for the next writes stay cached.
@Suite("Merging documents the store has not seen")
struct UnseenCreationMergeTests {
    static func insert(_ store: Store, _ id: String, _ fields: String) throws {
        try store.execute("INSERT INTO cars DOCUMENTS (\(fields.dropLast()), '_id': :id})", arguments: ["id": .string(id)])
    }

    static func everything(_ store: Store) throws -> DeltaBatch {
        try store.changes(after: 0, since: .empty, limit: 10_000).batch
    }

    @Test("new documents are inserted whole, and merging them again changes nothing")
    func inserted() throws {
        let source = try Store(inMemory: Store.Options())
        for n in 0..<50 { try Self.insert(source, "d\(n)", "{'n': \(n), 'tags': {'a': true}}") }
        try source.execute("UPDATE cars SET n = 100 WHERE _id = 'd7'")
        let follower = try Store(inMemory: Store.Options())
        let results = try follower.merge(try Self.everything(source))
        #expect(results.count == 50 && results.allSatisfy { $0.kind == .inserted })
        let read = "SELECT * FROM cars ORDER BY _id"
        #expect(try follower.execute(read).items == source.execute(read).items)
        #expect(try follower.execute("SELECT n FROM cars WHERE _id = 'd7'").items == [["n": .int(100)]])
        // The log has one position for each document, none skipped.
        #expect(follower.changeSequence == 50)
        #expect(try follower.merge(try Self.everything(source)).isEmpty)
        #expect(follower.changeSequence == 50)
    }

    @Test("a document created on both sides under one ID is joined, not replaced, at the next position")
    func sameIDCreatedTwice() throws {
        let here = try Store(inMemory: Store.Options())
        let there = try Store(inMemory: Store.Options())
        try Self.insert(here, "x", "{'mine': 1}")
        try Self.insert(here, "y", "{'mine': 2}")
        try Self.insert(there, "x", "{'theirs': 3}")
        try Self.insert(there, "z", "{'theirs': 4}")
        let before = here.changeSequence
        let results = try here.merge(try Self.everything(there))
        #expect(Set(results.map { "\($0.id.stringValue ?? "?") \($0.kind)" }) == ["x updated", "z inserted"])
        let x = try here.execute("SELECT mine, theirs FROM cars WHERE _id = 'x'").items
        #expect(x == [["mine": .int(1), "theirs": .int(3)]], "the row found after all keeps its own field")
        #expect(try here.execute("SELECT COUNT(*) AS n FROM cars").items == [["n": .int(3)]])
        // x's insert found the row and wrote nothing: its position was taken back, so the two
        // documents took the next two.
        #expect(here.changeSequence == before + 2)
        let logged = try here.changedDocuments(after: before, limit: 10).documents
        #expect(Set(logged.map(\.key.id)) == [.string("x"), .string("z")])
    }

    @Test("merging documents the store has not seen keeps what local writes cached")
    func cacheKept() throws {
        var options = Store.Options()
        options.stateCacheBytes = 4_000
        let follower = try Store(inMemory: options)
        let keys = (0..<60).map { DocumentKey(collection: "cars", id: .string("mine\($0)")) }
        for key in keys { try Self.insert(follower, key.id.stringValue!, "{'n': 1}") }
        let sequences = try DocumentStateCacheTests.positions(of: keys, in: follower)
        let cached = keys.indices.filter { follower.stateCache.state(of: keys[$0], at: sequences[$0]) != nil }
        #expect(!cached.isEmpty)

        let source = try Store(inMemory: Store.Options())
        for n in 0..<60 { try Self.insert(source, "theirs\(n)", "{'n': \(n)}") }
        #expect(try follower.merge(try Self.everything(source)).count == 60)
        let evicted = cached.filter { follower.stateCache.state(of: keys[$0], at: sequences[$0]) == nil }
        #expect(evicted.isEmpty, "the merge evicted \(evicted.count) of the \(cached.count) states the writes cached")
        #expect(follower.stateCache.usage.bytes <= 4_000)
    }
}
