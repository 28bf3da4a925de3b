#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Files and directories only their owner may use: what a store keeps in its data directory
/// (documents, blobs, blobs arriving, uploads being received) is the user's data, and another
/// local user must not read it. Directories get mode 0700 and files 0600 whatever the process's
/// umask: each is created with that mode and then set to it (`fchmod`), because a umask only
/// removes bits and a default ACL on the parent could add some.
enum PrivateFiles {
    static let directoryMode: mode_t = 0o700
    static let fileMode: mode_t = 0o600

    /// Creates the directory at `url` (mode 0700) unless it exists; missing parents are created
    /// as well, with the same mode. An existing directory is left as it is (`DataDirectoryAccess`
    /// tightens a data directory when a store opens it). Returns the directories it made,
    /// outermost first (for `DurableFiles.place` to make their entries durable).
    @discardableResult
    static func makeDirectory(_ url: URL) throws -> [URL] {
        let path = url.path
        if mkdir(path, directoryMode) == 0 {
            guard chmod(path, directoryMode) == 0 else { throw failure("setting the mode of", path) }
            return [url]
        }
        switch errno {
        case EEXIST:
            var status = stat()
            guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
                throw StoreError.attachment("\(path) exists but is not a directory; move it away")
            }
            return []
        case ENOENT:
            let parent = url.deletingLastPathComponent()
            guard parent.path != path else { throw failure("creating", path, errno: ENOENT) }
            return try makeDirectory(parent) + makeDirectory(url)
        default:
            throw failure("creating", path)
        }
    }

    /// Creates a new, empty file at `url` (mode 0600), open for writing; fails if a file is
    /// already there (a name of our own choosing that exists means something is wrong).
    static func createFile(_ url: URL) throws -> FileHandle {
        let path = url.path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, fileMode)
        guard descriptor >= 0 else { throw failure("creating", path) }
        guard fchmod(descriptor, fileMode) == 0 else {
            let error = errno
            close(descriptor)
            unlink(path)
            throw failure("setting the mode of", path, errno: error)
        }
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    /// Writes `bytes` to a new file at `url` (mode 0600); fails if a file is there. Not synced:
    /// `DurableFiles.place` syncs it as it puts it in place.
    static func write(_ bytes: Data, to url: URL) throws {
        let handle = try createFile(url)
        defer { try? handle.close() }
        try handle.write(contentsOf: bytes)
    }

    static func failure(_ operation: String, _ path: String, errno error: Int32 = errno) -> StoreError {
        .attachment("\(operation) \(path) failed: \(String(cString: strerror(error))) (errno \(error)); check that the data directory belongs to the user running this and has room")
    }
}
