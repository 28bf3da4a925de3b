#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// An exclusive lock on a data directory, held for the life of the store: a second process
/// opening the same directory gets a clear error instead of two writers corrupting each other.
/// The lock is `flock(2)` on `arcus.lock`, so it goes away when the process dies, however it dies;
/// a store that closes lets go of it sooner (`release`).
final class DataDirectoryLock: Sendable {
    /// The lock file, open while the lock is held.
    private let descriptor: Mutex<Int32?>
    /// Whether the process that held the directory before never let go of it cleanly (it was
    /// killed, crashed, or the power went): its note was still in the lock file.
    let heldUntilUncleanEnd: Bool

    init(directory: URL) throws {
        let path = directory.appendingPathComponent("arcus.lock").path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw StoreError.cannotOpen(path: directory.path, reason: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.readHolder(fd)
            close(fd)
            throw StoreError.dataDirectoryInUse(path: directory.path, holder: holder)
        }
        var probe = [UInt8](repeating: 0, count: 1)
        heldUntilUncleanEnd = pread(fd, &probe, 1, 0) > 0
        // Who holds it, for the next process's error message; on disk before the store is used,
        // so that a power cut soon after is still seen as one.
        let note = "process \(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = note.withCString { pwrite(fd, $0, strlen($0), 0) }
        _ = fsync(fd)
        descriptor = Mutex(fd)
    }

    /// Lets go of the directory, saying it was left cleanly; again changes nothing.
    func release() {
        descriptor.withLock { held in
            guard let fd = held else { return }
            held = nil
            // An empty file tells the next store to open the directory that this one ended cleanly.
            _ = ftruncate(fd, 0)
            flock(fd, LOCK_UN)
            close(fd)
        }
    }

    deinit { release() }

    private static func readHolder(_ fd: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = pread(fd, &buffer, buffer.count, 0)
        let text = count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : ""
        return text.isEmpty ? "another process" : text
    }
}
