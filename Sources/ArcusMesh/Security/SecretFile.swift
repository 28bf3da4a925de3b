import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A small file that holds a private key, so only its owner may read it (mode 0600): a peer's
/// identity, a mesh authority's key. Reading refuses a file its group or others may read, or that
/// another user owns; creating writes a temporary file with mode 0600, syncs it and links it into
/// place, so a crash never leaves half a key and an existing file is never replaced.
public enum SecretFile {
    /// The bytes of the file at `path`, or nil if there is none. Throws when the file is open to
    /// others, owned by another user, larger than `maximumBytes`, or cannot be read.
    public static func read(at path: String, maximumBytes: Int) throws(SecretFileError) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if descriptor < 0 {
            let error = errno
            if error == ENOENT { return nil }
            throw systemError(path, "opening", error)
        }
        defer { close(descriptor) }

        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw systemError(path, "checking", errno) }
        let mode = UInt32(status.st_mode)
        guard mode & 0o077 == 0 else { throw .tooOpen(path: path, mode: mode) }
        guard status.st_uid == geteuid() else { throw .notOwned(path: path, owner: status.st_uid, user: geteuid()) }

        // One byte more than allowed, so that a longer file is noticed rather than cut.
        var bytes = [UInt8](repeating: 0, count: maximumBytes + 1)
        var count = 0
        while count < bytes.count {
            let got = retryingInterrupted {
                bytes.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress.map { $0 + count }, $0.count - count) }
            }
            guard got >= 0 else { throw systemError(path, "reading", errno) }
            if got == 0 { break }
            count += got
        }
        guard count <= maximumBytes else { throw .tooLarge(path: path, limit: maximumBytes) }
        return Array(bytes[0..<count])
    }

    /// Creates the file at `path` holding `bytes`, mode 0600; false if a file is already there.
    public static func create(_ bytes: [UInt8], at path: String) throws(SecretFileError) -> Bool {
        let temporary = "\(path).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw systemError(temporary, "creating", errno) }
        defer { unlink(temporary) }
        do {
            defer { close(descriptor) }
            // The umask only removes bits, but a default ACL could add some.
            guard fchmod(descriptor, 0o600) == 0 else { throw systemError(temporary, "setting the mode of", errno) }
            var written = 0
            while written < bytes.count {
                let count = retryingInterrupted {
                    bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress.map { $0 + written }, $0.count - written) }
                }
                guard count >= 0 else { throw systemError(temporary, "writing", errno) }
                written += count
            }
            guard fsync(descriptor) == 0 else { throw systemError(temporary, "syncing", errno) }
        }
        // link(2), unlike rename(2), fails rather than replace a file another process just stored.
        if link(temporary, path) != 0 {
            let error = errno
            if error == EEXIST { return false }
            throw systemError(path, "creating", error)
        }
        syncDirectory(of: path)
        return true
    }

    /// Makes the new directory entry durable; best effort, as some file systems refuse it.
    private static func syncDirectory(of path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let descriptor = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }

    /// Calls `call` again while a signal interrupts it; a negative result leaves its `errno`.
    private static func retryingInterrupted(_ call: () -> Int) -> Int {
        while true {
            let result = call()
            if result >= 0 || errno != EINTR { return result }
        }
    }

    private static func systemError(_ path: String, _ operation: String, _ error: Int32) -> SecretFileError {
        .system(path: path, operation: operation, errno: error, message: String(cString: strerror(error)))
    }
}

/// Why a `SecretFile` could not be read or created. Each case says what to do.
public enum SecretFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Its group or others may read the file: the key in it may have leaked.
    case tooOpen(path: String, mode: UInt32)
    /// Another user than the one running this process owns the file.
    case notOwned(path: String, owner: UInt32, user: UInt32)
    /// The file is larger than any key it could hold.
    case tooLarge(path: String, limit: Int)
    /// A system call failed.
    case system(path: String, operation: String, errno: Int32, message: String)

    public var description: String {
        switch self {
        case .tooOpen(let path, let mode):
            return "\(path) has mode \(String(mode & 0o777, radix: 8)), but it holds a private key, so only its owner may read it. "
                + "Run `chmod 600 \(path)` (and replace the key if others may have read it)"
        case .notOwned(let path, let owner, let user):
            return "\(path) belongs to user \(owner), not to user \(user) who runs this; run as its owner, or `chown` it to this user"
        case .tooLarge(let path, let limit):
            return "\(path) is larger than \(limit) bytes, so it is not a key file; move it away"
        case .system(let path, let operation, let errno, let message):
            return "\(operation) \(path) failed: \(message) (errno \(errno))"
        }
    }
}
