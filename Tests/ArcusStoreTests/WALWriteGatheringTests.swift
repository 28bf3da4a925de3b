import ArcusCRDT
import Foundation
import GRDB
import Testing
@testable import ArcusStore

/// A transaction's write-ahead-log frames go to the log in one write (`WALWriteGathering`), and
/// nothing about the log as others see it changes: a reader on another connection finds every
/// commit as soon as `write` returns, and large transactions commit whole.
@Suite("WAL writes gathered per commit")
struct WALWriteGatheringTests {
    /// A connection of its own on the store's file, as another process would open it.
    private static func reader(_ t: TemporaryStore) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: t.directory.appendingPathComponent("store.sqlite").path, configuration: configuration)
    }

    private static func count(_ reader: DatabaseQueue, _ collection: String) throws -> Int {
        try reader.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM document WHERE collection = ? AND json IS NOT NULL", arguments: [collection]) ?? -1 }
    }

    @Test("another connection reads each commit as soon as the write returns, and the log was written in fewer calls than SQLite asked for")
    func commitsAreVisibleAtOnce() throws {
        let t = try TemporaryStore()
        let reader = try Self.reader(t)
        let before = WALWriteGathering.statistics
        for i in 0..<60 {
            _ = try t.store.collection("orders").upsert(["_id": .string("o\(i)"), "status": .string("open"), "n": .int(Int64(i))])
            // The reader takes the frames the commit published in the WAL index from the log file:
            // had they still been gathered, it would read past the file's end.
            #expect(try Self.count(reader, "orders") == i + 1)
        }
        let after = WALWriteGathering.statistics
        let requested = after.requested - before.requested, written = after.written - before.written
        // Each commit is at least one frame, asked for as two writes (its header, its page).
        // Other suites' stores write meanwhile, and their writes are gathered too.
        #expect(requested >= 120, "\(requested) asked for")
        #expect(written < requested, "\(written) written of \(requested) asked for")
        #expect(try t.store.checkIntegrity() == ["ok"])
    }

    @Test("a transaction of more frames than one gathered write holds (past 128 KiB, the most the unix VFS writes in one call) commits whole")
    func largeTransactionsCommit() throws {
        let t = try TemporaryStore()
        let reader = try Self.reader(t)
        // About 600 KiB of pages in one commit, then one of 120 KiB: both go out in several writes.
        let text = String(repeating: "y", count: 20_000)
        try t.store.write { tx in
            for i in 0..<30 { _ = try tx.upsert(["_id": .string("big\(i)"), "text": .string(text + "\(i)")], into: "logs") }
        }
        #expect(try Self.count(reader, "logs") == 30)
        try t.store.write { tx in
            for i in 30..<36 { _ = try tx.upsert(["_id": .string("big\(i)"), "text": .string(text + "\(i)")], into: "logs") }
        }
        #expect(try Self.count(reader, "logs") == 36)
        try t.store.close()
        let reopened = try Store(directory: t.directory)
        #expect(try reopened.execute("SELECT COUNT(*) AS n FROM logs").items == [["n": .int(36)]])
        #expect(try reopened.checkIntegrity() == ["ok"])
    }

    @Test("a transaction rolled back after spilling frames to the log leaves nothing of them behind")
    func rollbackAfterSpill() throws {
        let t = try TemporaryStore()
        let reader = try Self.reader(t)
        _ = try t.store.collection("logs").upsert(["_id": "kept", "text": "before"])
        struct Abandon: Error {}
        // Far more than the writer's page cache (2 MiB): SQLite spills frames to the log before
        // the commit that never comes.
        let text = String(repeating: "z", count: 30_000)
        #expect(throws: Abandon.self) {
            try t.store.write { tx in
                for i in 0..<150 { _ = try tx.upsert(["_id": .string("gone\(i)"), "text": .string(text + "\(i)")], into: "logs") }
                throw Abandon()
            }
        }
        #expect(try Self.count(reader, "logs") == 1)
        _ = try t.store.collection("logs").upsert(["_id": "after", "text": "after"])
        #expect(try Self.count(reader, "logs") == 2)
        try t.store.close()
        let reopened = try Store(directory: t.directory)
        #expect(try reopened.execute("SELECT _id FROM logs ORDER BY _id").items.compactMap { $0[path: ["_id"]]?.stringValue } == ["after", "kept"])
        #expect(try reopened.checkIntegrity() == ["ok"])
    }
}
