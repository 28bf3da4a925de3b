import ArcusCRDT
import Foundation
import Testing
@testable import ArcusStore

#if canImport(Glibc)
import Glibc
#endif

/// The data directory is private to the user that runs the store: the directory and every
/// directory in it 0700, every file 0600 (database, write-ahead log, shared memory, lock, blobs,
/// blobs arriving, uploads being received), whatever the umask; a directory left open by an
/// earlier version is tightened when the store opens; one of another user is refused.
///
/// Serialized: one test sets the process's umask to 000 while it makes files.
@Suite("Data directory access", .serialized)
struct DataDirectoryAccessTests {
    static func mode(_ url: URL) -> mode_t? {
        var status = stat()
        guard lstat(url.path, &status) == 0 else { return nil }
        return status.st_mode & 0o777
    }

    static func octal(_ mode: mode_t?) -> String { mode.map { String($0, radix: 8) } ?? "missing" }

    /// Every directory and file under `root`, with its mode, the root included.
    static func modes(under root: URL) -> [(path: String, directory: Bool, mode: mode_t)] {
        var found: [(String, Bool, mode_t)] = []
        var pending = [root.path]
        while let path = pending.popLast() {
            var status = stat()
            guard lstat(path, &status) == 0 else { continue }
            let isDirectory = status.st_mode & S_IFMT == S_IFDIR
            found.append((path, isDirectory, status.st_mode & 0o777))
            if isDirectory {
                pending += ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).map { (path as NSString).appendingPathComponent($0) }
            }
        }
        return found
    }

    /// A store with documents (so the WAL and shared memory exist), a blob from bytes, one from
    /// a file, a blob half arrived from a peer, and an upload being received.
    static func populate(_ store: Store, scratch: URL) throws -> [UInt8] {
        try store.collection("orders").upsert(["_id": "o1", "total": 12])
        _ = try store.newAttachment(Data(repeating: 1, count: 5_000))
        let input = scratch.appendingPathComponent("input.bin")
        try Data(repeating: 2, count: 70_000).write(to: input)
        _ = try store.newAttachment(path: input.path)
        let arriving = [UInt8](repeating: 0xCD, count: 32)
        try store.receiveAttachmentPiece(hash: arriving, offset: 0, bytes: [1, 2, 3])
        let upload = try #require(try store.makeUploadFile())
        try upload.handle.write(contentsOf: Data([4, 5, 6]))
        try upload.handle.close()
        return arriving
    }

    @Test("with umask 000, a new data directory and everything the store makes in it is private: directories 0700, files 0600")
    func privateUnderPermissiveUmask() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-modes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        // Parents that do not exist yet are made too.
        let directory = scratch.appendingPathComponent("deep/data")
        let previous = umask(0)
        defer { umask(previous) }
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let store = try Store(directory: directory)
        _ = try Self.populate(store, scratch: scratch)
        umask(previous)

        let found = Self.modes(under: directory)
        let names = Set(found.map { ($0.path as NSString).lastPathComponent })
        for expected in ["store.sqlite", "store.sqlite-wal", "store.sqlite-shm", "arcus.lock", "attachments", "partial"] {
            #expect(names.contains(expected), "no \(expected) in \(names.sorted())")
        }
        #expect(found.contains { ($0.path as NSString).lastPathComponent.hasPrefix(Store.uploadPrefix) })
        // Two blobs in directories named by their hash's first byte, one piece arriving.
        #expect(found.filter { !$0.directory && $0.path.contains("/attachments/") }.count == 3, "\(found.map(\.path))")
        for entry in found {
            #expect(entry.mode == (entry.directory ? 0o700 : 0o600), "\(entry.path) has mode \(Self.octal(entry.mode))")
        }
        #expect(Self.mode(directory.deletingLastPathComponent()) == 0o700, "a parent the store made")
        #expect(store.accessChanges.isEmpty)
    }

    @Test("a data directory an earlier version left open is tightened when the store opens, which says what it changed")
    func tightensAnOpenDirectory() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-modes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let directory = scratch.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        do {
            let store = try Store(directory: directory)
            _ = try Self.populate(store, scratch: scratch)
        }
        // As an earlier version (and the default umask) made them.
        for entry in Self.modes(under: directory) {
            #expect(chmod(entry.path, entry.directory ? 0o755 : 0o644) == 0)
        }
        let store = try Store(directory: directory)
        for entry in Self.modes(under: directory) {
            #expect(entry.mode == (entry.directory ? 0o700 : 0o600), "\(entry.path) has mode \(Self.octal(entry.mode))")
        }
        let changes = store.accessChanges.joined(separator: ", ")
        for expected in ["the data directory 755 → 700", "store.sqlite 644 → 600", "arcus.lock 644 → 600", "uploads being received 644 → 600",
                         "attachment directories → 0700", "3 attachment files → 0600"] {
            #expect(changes.contains(expected), "\(changes)")
        }
        // The store still works.
        #expect(try store.execute("SELECT * FROM orders").items.count == 1)
    }

    @Test("a data directory that belongs to another user is refused, saying whose it is and what to do", .enabled(if: geteuid() == 0, "needs root to give the directory away"))
    func anotherUsersDirectory() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-modes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        #expect(chown(directory.path, 65_534, 65_534) == 0)
        #expect(chmod(directory.path, 0o755) == 0)
        let error = #expect(throws: StoreError.self) { try Store(directory: directory) }
        #expect(error.map { "\($0)".contains("belongs to user 65534") && "\($0)".contains("chown") } == true, "\(String(describing: error))")
        // Left as it was: neither tightened nor filled.
        #expect(Self.mode(directory) == 0o755)
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("store.sqlite").path))
    }
}
