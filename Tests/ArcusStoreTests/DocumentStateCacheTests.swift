import ArcusCRDT
import Foundation
import Testing
import ArcusCodec
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

    /// Each document's change-log position, as its row holds it.
    static func positions(of keys: [DocumentKey], in store: Store) throws -> [Int64] {
        try store.read { db in
            try keys.map { try Int64.fetchOne(db, sql: "SELECT seq FROM document WHERE collection = ? AND id = ?", arguments: [$0.collection, $0.storageID])! }
        }
    }

    /// The row's position and the state the cache holds there, if any.
    static func cached(_ store: Store) throws -> (sequence: Int64, state: DocumentState?) {
        let sequence = try positions(of: [key], in: store)[0]
        return (sequence, store.stateCache.state(of: key, at: sequence))
    }

    static func expectCached(_ store: Store, _ sequence: Int64, _ state: DocumentState, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let now = try cached(store)
        #expect(now.sequence == sequence, sourceLocation: sourceLocation)
        #expect(now.state == state, "the state is cached", sourceLocation: sourceLocation)
    }

    @Test("a writer takes the cached state to change it, and gives it back when it changes nothing")
    func takenAndGivenBack() throws {
        let t = try TemporaryStore()
        // Written twice, the row holds an encoded state, whose layout the cache knows.
        try Self.set(t.store, 1)
        try Self.set(t.store, 2)
        let written = try Self.cached(t.store)
        let state = try #require(written.state)
        // Taken, the state is no reader's to see, but the row's layout stays known.
        let cache = t.store.stateCache
        #expect(cache.take(of: Self.key, at: written.sequence) == state)
        #expect(cache.state(of: Self.key, at: written.sequence) == nil)
        #expect(cache.take(of: Self.key, at: written.sequence) == nil)
        #expect(cache.layout(of: Self.key)?.sequence == written.sequence)
        cache.giveBack(state, of: Self.key)
        #expect(cache.state(of: Self.key, at: written.sequence) == state)

        // A merge of what the store already has, and a builder update that changes nothing,
        // leave the row where it was and its state cached, not dropped for the next read to
        // decode again.
        try t.store.write { tx in
            let merged = try tx.merge(DocumentDelta(key: Self.key, state: state))
            #expect(!merged)
        }
        try Self.expectCached(t.store, written.sequence, state)
        try t.store.write { tx in
            let updated = try tx.update(Self.key) { _ in }
            #expect(!updated)
        }
        try Self.expectCached(t.store, written.sequence, state)

        // A CRDT mutation that says it changed nothing may have changed the state it was handed
        // all the same: that state is not cached, and the next read sees what the row holds.
        try t.store.write { tx in
            let applied = try tx.apply(Self.key) { state, stamp in
                _ = state.set(FieldPath(["n"]), to: .int(99), at: stamp)
                return nil
            }
            #expect(!applied)
        }
        #expect(try Self.cached(t.store).state == nil)
        #expect(try Self.logged(t.store) == .int(2))

        // A change caches the new state at the row's new position.
        try Self.set(t.store, 3)
        let changed = try Self.cached(t.store)
        #expect(changed.sequence > written.sequence)
        #expect(changed.state?.value?[path: "n"] == .int(3))
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

    @Test("reading the whole log keeps what writes cached: a state only read fills room to spare, never evicts")
    func readsDoNotEvict() throws {
        var options = Store.Options()
        options.stateCacheBytes = 4_000
        let t = try TemporaryStore(options: options)
        let keys = (0..<60).map { DocumentKey(collection: "cars", id: .string("d\($0)")) }
        for key in keys {
            try t.store.execute("INSERT INTO cars DOCUMENTS ({'_id': :id, 'n': 1})", arguments: ["id": key.id])
        }
        let sequences = try Self.positions(of: keys, in: t.store)
        let cachedByWrites = keys.indices.filter { t.store.stateCache.state(of: keys[$0], at: sequences[$0]) != nil }
        #expect(!cachedByWrites.isEmpty && cachedByWrites.count < keys.count / 2, "\(cachedByWrites.count) of \(keys.count) cached")
        // A backfill's read: every document once, most of them not cached.
        #expect(try t.store.changedDocuments(after: 0, limit: 100).documents.count == keys.count)
        let evicted = cachedByWrites.filter { t.store.stateCache.state(of: keys[$0], at: sequences[$0]) == nil }
        #expect(evicted.isEmpty, "the read evicted \(evicted.count) of the \(cachedByWrites.count) states the writes cached")
        #expect(t.store.stateCache.usage.bytes <= 4_000)
    }
}
