import ArcusCRDT
import Foundation
import GRDB
import Testing
@testable import ArcusStore

/// The write-ahead log is copied into the database file off the writer (`WALCheckpointer`), and
/// stays bounded when the checkpointer cannot keep up.
@Suite("WAL checkpoints off the writer")
struct WALCheckpointerTests {
    /// Each document carries 12,000 characters, so that a write adds several pages to the log.
    private static func write(_ range: Range<Int>, to store: Store) throws {
        let text = String(repeating: "x", count: 12_000)
        for i in range { _ = try store.collection("logs").upsert(["_id": .string("d\(i)"), "text": .string(text + "\(i)")]) }
    }

    private static func size(_ directory: URL, _ name: String) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)[.size] as? Int ?? 0
    }

    private static func logPages(_ store: Store) throws -> Int {
        try store.writer.writeWithoutTransaction { db in
            // A PASSIVE checkpoint that copies nothing new reports the log's size in pages.
            try db.checkpoint(.passive).walFrameCount
        }
    }

    /// Closes the store and opens it again: every document written is there, the file sound.
    private static func expectWhole(_ t: TemporaryStore, documents: Int) throws {
        try t.store.close()
        let reopened = try Store(directory: t.directory)
        #expect(try reopened.execute("SELECT COUNT(*) AS n FROM logs").items == [["n": .int(Int64(documents))]])
        #expect(try reopened.checkIntegrity() == ["ok"])
    }

    @Test("past 1,000 pages the log is copied into the database file by the checkpointer's connection, not by a commit")
    func checkpointsOffTheWriter() throws {
        let t = try TemporaryStore()
        let checkpointer = try #require(t.store.checkpointer)
        try Self.write(0..<400, to: t.store)
        checkpointer.waitUntilIdle()
        let statistics = checkpointer.statistics
        #expect(statistics.background >= 1, "\(statistics)")
        #expect(statistics.inline == 0, "\(statistics)")
        // Without a checkpoint every page written would still be in the log, and the database
        // file would hold only the schema.
        #expect(try Self.size(t.directory, "store.sqlite") > 1 << 20)
        try Self.expectWhole(t, documents: 400)
    }

    @Test("a checkpointer held back leaves the log to the writer past 4,000 pages: the log starts again and its file stays bounded")
    func writerCheckpointsPastTheLimit() throws {
        let t = try TemporaryStore()
        let checkpointer = try #require(t.store.checkpointer)
        checkpointer.queue.suspend()
        var resumed = false
        defer { if !resumed { checkpointer.queue.resume() } }
        try Self.write(0..<1_400, to: t.store)
        #expect(checkpointer.statistics.inline >= 1, "\(checkpointer.statistics)")
        // The pages written add up to over twice the limit; the log was copied and started
        // again, so it never held much more than the limit and a commit.
        let pageSize = try t.store.writer.read { try Int.fetchOne($0, sql: "PRAGMA page_size") } ?? 4096
        let wal = try Self.size(t.directory, "store.sqlite-wal")
        #expect(wal <= 32 + (Int(WALCheckpointer.limit) + 100) * (pageSize + 24), "WAL file of \(wal) bytes")
        #expect(try Self.logPages(t.store) < Int(WALCheckpointer.limit) + 100)
        checkpointer.queue.resume()
        resumed = true
        try Self.expectWhole(t, documents: 1_400)
    }

    @Test("a store in memory has no log and no checkpointer")
    func noneInMemory() throws {
        #expect(try Store(inMemory: Store.Options()).checkpointer == nil)
    }
}
