import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension PeerIdentity {
    /// The identity stored at `url`, or a new one stored there if the file does not exist.
    ///
    /// A new file is written whole to a temporary file with mode 0600, synced, then linked into
    /// place, so a crash never leaves a half-written identity and two processes starting at once
    /// end up with the same one. An existing file that its group or others may read, or that
    /// another user owns, is refused with `IdentityError.fileTooOpen` / `.fileNotOwned`: its key
    /// may have leaked, and the error says how to fix the mode.
    public static func load(orCreateAt url: URL) throws(IdentityError) -> PeerIdentity {
        let path = url.path
        if let existing = try readIdentity(at: path) { return existing }
        let identity = PeerIdentity()
        if try writeNew(identity.serialized, at: path) { return identity }
        // Another process created the file first: use its identity.
        guard let existing = try readIdentity(at: path) else {
            throw .fileSystem(path: path, operation: "reading", errno: ENOENT, message: "the file vanished after it was created")
        }
        return existing
    }

    /// The identity in the file at `path`, nil if there is no file.
    private static func readIdentity(at path: String) throws(IdentityError) -> PeerIdentity? {
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
        guard mode & 0o077 == 0 else { throw .fileTooOpen(path: path, mode: mode) }
        guard status.st_uid == geteuid() else { throw .fileNotOwned(path: path, owner: status.st_uid, user: geteuid()) }

        // An identity is 48 bytes: read a little more so that a longer file is noticed, not cut.
        let limit = PeerIdentity.magic.count + 32 + 1
        var bytes = [UInt8](repeating: 0, count: limit)
        var count = 0
        while count < limit {
            let got = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + count, limit - count) }
            if got < 0 {
                if errno == EINTR { continue }
                throw systemError(path, "reading", errno)
            }
            if got == 0 { break }
            count += got
        }
        do {
            return try PeerIdentity(serialized: bytes[0..<count])
        } catch {
            throw .malformedIdentity("\(path) is not an Arcus identity file (\(count) bytes); move it away to create a new identity")
        }
    }

    /// Creates the file at `path` holding `bytes` with mode 0600; false if a file is already there.
    private static func writeNew(_ bytes: [UInt8], at path: String) throws(IdentityError) -> Bool {
        let temporary = "\(path).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw systemError(temporary, "creating", errno) }
        defer { unlink(temporary) }
        do {
            defer { close(descriptor) }
            // The umask can only remove bits, but a set-group-id directory or ACL must not add any.
            guard fchmod(descriptor, 0o600) == 0 else { throw systemError(temporary, "setting the mode of", errno) }
            var written = 0
            while written < bytes.count {
                let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, bytes.count - written) }
                if count < 0 {
                    if errno == EINTR { continue }
                    throw systemError(temporary, "writing", errno)
                }
                written += count
            }
            guard fsync(descriptor) == 0 else { throw systemError(temporary, "syncing", errno) }
        }
        // link(2) fails rather than replace an identity another process just stored.
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

    private static func systemError(_ path: String, _ operation: String, _ error: Int32) -> IdentityError {
        .fileSystem(path: path, operation: operation, errno: error, message: String(cString: strerror(error)))
    }
}
