#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArcusCRDT
import Foundation
import GRDB
import Testing
@testable import ArcusStore

/// What a commit and a blob survive: `Options.synchronous` reaches SQLite on every connection,
/// and blobs are put in place through `DurableFiles` (fsynced, renamed, their directory fsynced),
/// whose fsync failures are thrown.
@Suite("Store durability")
struct StoreDurabilityTests {
    private static func options(_ synchronous: Store.Options.Synchronous) -> Store.Options {
        var options = Store.Options()
        options.synchronous = synchronous
        return options
    }

    @Test("a store opened with .full commits with PRAGMA synchronous = 2 (FULL), with .normal (the default) = 1, on every connection")
    func synchronousReachesSQLite() throws {
        for (synchronous, level) in [(Store.Options.Synchronous.full, 2), (.normal, 1)] {
            let t = try TemporaryStore(options: Self.options(synchronous))
            try t.store.collection("cars").upsert(["_id": "a"])
            #expect(try t.store.synchronousLevel() == level, "\(synchronous)")
            // A reader connection of the pool, too.
            #expect(try t.store.writer.read { try Int.fetchOne($0, sql: "PRAGMA synchronous") } == level, "\(synchronous)")
            // And the connection that checkpoints the log (`WALCheckpointer`): its fsyncs follow it.
            let checkpointer = try #require(t.store.checkpointer)
            #expect(try checkpointer.connection.read { try Int.fetchOne($0, sql: "PRAGMA synchronous") } == level, "\(synchronous)")
        }
        #expect(try TemporaryStore().store.synchronousLevel() == 1)
        // Changed while open (an agent's `ALTER SYSTEM SET durability`): the writer and the
        // checkpointer's connection both take it.
        let changed = try TemporaryStore(options: Self.options(.normal))
        try changed.store.setSynchronous(.full)
        #expect(try changed.store.synchronousLevel() == 2)
        let checkpointer = try #require(changed.store.checkpointer)
        #expect(try checkpointer.connection.read { try Int.fetchOne($0, sql: "PRAGMA synchronous") } == 2)
        // Reopened with another setting, the store takes the new one (it is not kept in the file).
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let store = try Store(directory: directory, options: Self.options(.normal))
            #expect(try store.synchronousLevel() == 1)
        }
        #expect(try Store(directory: directory, options: Self.options(.full)).synchronousLevel() == 2)
    }

    private static func scratch() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-durable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("placing a file renames it under its name in a directory made for it: the bytes and the directory entries are there, the temporary name gone")
    func placement() throws {
        let root = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: root) }
        let shard = root.appendingPathComponent("attachments/ab")
        let created = try PrivateFiles.makeDirectory(shard)
        #expect(created.map(\.lastPathComponent) == ["attachments", "ab"])
        #expect(try PrivateFiles.makeDirectory(shard).isEmpty)
        let temporary = shard.appendingPathComponent(".incoming-1")
        try PrivateFiles.write(Data("blob".utf8), to: temporary)
        let destination = shard.appendingPathComponent("abcdef")
        try DurableFiles.place(temporary, at: destination, created: created)
        #expect(try Data(contentsOf: destination) == Data("blob".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: shard.path) == ["abcdef"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path) == ["attachments"])
    }

    @Test("a source that cannot be opened to be fsynced is not renamed: place syncs before it renames, and throws")
    func placementSyncsFirst() throws {
        let root = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: root) }
        let target = root.appendingPathComponent("target")
        try Data("x".utf8).write(to: target)
        // O_NOFOLLOW refuses a symbolic link (ELOOP): the sync fails, so nothing may move.
        let link = root.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        let destination = root.appendingPathComponent("placed")
        #expect(throws: StoreError.self) { try DurableFiles.place(link, at: destination) }
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        // Nor can a directory entry be synced in a directory that is not there.
        #expect(throws: StoreError.self) { try DurableFiles.sync(root.appendingPathComponent("missing")) }
    }

    @Test("a failing fsync throws, naming the file and the error: a descriptor that is not open (EBADF), one that cannot be synced (a pipe, EINVAL)")
    func failingSyncThrows() throws {
        // A descriptor closed before the sync; -1 is never open, so no other test's file can take its number.
        do {
            try DurableFiles.sync(-1, path: "/closed")
            Issue.record("fsync of a closed descriptor did not throw")
        } catch let error as StoreError {
            #expect("\(error)".contains("syncing /closed") && "\(error)".contains("errno \(EBADF)"), "\(error)")
        }
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        do {
            try DurableFiles.sync(ends[1], path: "a pipe")
            Issue.record("fsync of a pipe did not throw")
        } catch let error as StoreError {
            #expect("\(error)".contains("errno \(EINVAL)"), "\(error)")
        }
        // And an open file syncs.
        let root = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: root) }
        #expect(throws: Never.self) { try DurableFiles.sync(root) }
    }

    @Test("blobs stored from bytes, from a file and from pieces each end up under their hash, private, with no temporary file left")
    func blobsArePlaced() throws {
        let t = try TemporaryStore()
        let fromBytes = try t.store.newAttachment(Data("from bytes".utf8))
        let file = t.directory.appendingPathComponent("input.bin")
        try Data(repeating: 9, count: 70_000).write(to: file)
        let fromFile = try t.store.newAttachment(path: file.path)
        let files = t.store.attachmentFiles
        let pieces = Data("arrived in pieces".utf8)
        let hash = try AttachmentFiles(directory: nil).store(pieces)
        try files.appendPartial(hash, at: 0, Array(pieces.prefix(5)))
        try files.appendPartial(hash, at: 5, Array(pieces.dropFirst(5)))
        try files.completePartial(hash)
        for blob in [fromBytes.hash, fromFile.hash, hash] {
            let url = try #require(files.url(for: blob))
            let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            #expect(try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path).contains(url.lastPathComponent))
        }
        #expect(try files.read(hash) == pieces)
        let attachments = t.directory.appendingPathComponent("attachments")
        let leftovers = try FileManager.default.subpathsOfDirectory(atPath: attachments.path).filter { $0.contains(".incoming-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}
