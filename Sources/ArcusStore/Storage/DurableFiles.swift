#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Putting a file in place so that it survives a power cut, not only a crash: rename(2) makes the
/// new name atomic, but until the file's bytes and then the directory that names it are fsynced,
/// both live in the kernel's page cache and a power cut can leave no file, or a name with no
/// bytes. Every blob the store renames into place goes through `place` (AttachmentFiles).
enum DurableFiles {
    /// An open descriptor of a file or directory, for fsync(2); closed when it goes away.
    struct Descriptor: ~Copyable {
        let raw: CInt
        let path: String

        /// Opens `path` read-only (enough to fsync a file or a directory on Linux and macOS).
        init(opening path: String) throws {
            let raw = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard raw >= 0 else { throw PrivateFiles.failure("opening (to sync)", path) }
            self.raw = raw
            self.path = path
        }

        /// Forces what the kernel holds of it (bytes, or directory entries) to the disk.
        func sync() throws { try DurableFiles.sync(raw, path: path) }

        deinit { close(raw) }
    }

    /// fsync(2) of `descriptor`, which names `path`; its failure is thrown (EIO means the bytes
    /// may not be on the disk, and must not be acknowledged as if they were).
    static func sync(_ descriptor: CInt, path: String) throws {
        guard fsync(descriptor) == 0 else { throw PrivateFiles.failure("syncing", path) }
    }

    /// Opens `url` (a file or a directory), fsyncs it and closes it.
    static func sync(_ url: URL) throws {
        try Descriptor(opening: url.path).sync()
    }

    /// Renames `source` to `destination` durably: `source`'s bytes are fsynced first, then
    /// renamed, then the destination's directory is fsynced so that the new name is on the disk
    /// too; and for each directory in `created` (made for this file, such as a new `ab/` shard)
    /// its parent is fsynced, so that the directory itself is not lost. `source` and
    /// `destination` must be on one file system.
    static func place(_ source: URL, at destination: URL, created: [URL] = []) throws {
        try sync(source)
        guard rename(source.path, destination.path) == 0 else { throw PrivateFiles.failure("renaming into place", destination.path) }
        var synced: Set<String> = []
        for directory in [destination] + created {
            let parent = directory.deletingLastPathComponent()
            if synced.insert(parent.path).inserted { try sync(parent) }
        }
    }
}
