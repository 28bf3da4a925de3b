import ArcusCRDT
import Foundation
import Testing
@testable import ArcusStore

/// Reads through the cache of decoded states see what the rows hold: the latest commit, never a
/// write that rolled back, whatever the cache's size.
@Suite("Decoded-state cache")
struct DocumentStateCacheTests {
    struct Abort: Error {}

    static let key = DocumentKey(collection: "cars", id: "a")

    static func set(_ store: Store, _ n: Int64) throws {
        try store.write { tx in try tx.apply(key) { state, stamp in state.set(FieldPath(["n"]), to: .int(n), at: stamp) } }
    }

    /// The document's `n` as the change log and a merge's load see it.
    static func logged(_ store: Store) throws -> Value? {
        let documents = try store.changedDocuments(after: 0, limit: 100).documents
        return documents.first { $0.key == key }?.value?[path: "n"]
    }

    @Test("a write that rolled back is not what later reads see", arguments: [0, 2_000, 4 << 20])
    func rollback(capacity: Int) throws {
        var options = Store.Options()
        options.stateCacheBytes = capacity
        let t = try TemporaryStore(options: options)
        try Self.set(t.store, 1)
        #expect(try Self.logged(t.store) == .int(1))
        // Writes 2 at the next position, caches it, and rolls back: that position is given out again.
        #expect(throws: Abort.self) {
            try t.store.write { tx in
                try tx.apply(Self.key) { state, stamp in state.set(FieldPath(["n"]), to: .int(2), at: stamp) }
                throw Abort()
            }
        }
        #expect(try Self.logged(t.store) == .int(1))
        // A write that loads the document builds on the committed state, not the rolled-back
        // one, and takes the position it had. Its state is too big for the smaller cache to
        // keep, so only the rollback's emptying takes the rolled-back state out.
        let big = String(repeating: "x", count: 800)
        try t.store.write { tx in
            try tx.apply(Self.key) { state, stamp in
                #expect(state.value?[path: "n"] == .int(1))
                return state.set(FieldPath(["n"]), to: .string(big), at: stamp)
            }
        }
        #expect(try Self.logged(t.store) == .string(big))
        #expect(try t.store.execute("SELECT n FROM cars WHERE _id = 'a'").items == [["n": .string(big)]])
    }

    @Test("every read sees the latest commit, through a cache too small to hold the documents")
    func latestThroughEvictions() throws {
        var options = Store.Options()
        options.stateCacheBytes = 4_000
        let t = try TemporaryStore(options: options)
        for round in 1...5 {
            for id in 0..<20 {
                try t.store.execute("INSERT INTO cars DOCUMENTS ({'_id': :id, 'n': :n}) ON ID CONFLICT DO UPDATE", arguments: ["id": .string("d\(id)"), "n": .int(Int64(round * 100 + id))])
            }
            let documents = try t.store.changedDocuments(after: 0, limit: 100).documents
            #expect(documents.count == 20)
            for document in documents {
                let id = Int(document.key.id.stringValue!.dropFirst())!
                #expect(document.value?[path: "n"] == .int(Int64(round * 100 + id)))
            }
            // It holds some of them, never more than its bound.
            let usage = t.store.stateCache.usage
            #expect(usage.documents > 0 && usage.documents < 20 && usage.bytes <= 4_000, "\(usage)")
        }
    }
}
