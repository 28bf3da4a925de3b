#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Makes a data directory private to the user that runs the store, before anything in it is
/// opened: the directory 0700, the database and its `-wal`/`-shm` files and the lock 0600, the
/// attachments 0700 (directories) and 0600 (blobs, blobs arriving, uploads being received).
///
/// A directory made by an earlier version (0755, files 0644) is tightened, and `changes` says
/// what was changed, for the one log line the agent writes. A directory that belongs to another
/// user is refused: tightening it would lock its owner out, and leaving it open would leave the
/// store readable. The identity file is not touched here: `SecretFile` refuses one that others
/// may read, since its key may have leaked.
struct DataDirectoryAccess {
    let directory: URL
    /// What was tightened, one entry per kind of file ("store.sqlite 0644 → 0600").
    private(set) var changes: [String] = []

    /// The database, its write-ahead log and shared memory, and the lock.
    static let storeFiles = ["store.sqlite", "store.sqlite-wal", "store.sqlite-shm", "arcus.lock"]
    /// Files the agent receives uploads into, at the top of the data directory.
    static let uploadPrefix = ".upload-"

    /// Creates the directory (0700) or tightens the existing one and the store's files in it.
    init(directory: URL) throws {
        self.directory = directory
        let path = directory.path
        var status = stat()
        guard stat(path, &status) == 0 else {
            guard errno == ENOENT else { throw Self.cannotOpen(path, "cannot examine it: \(String(cString: strerror(errno)))") }
            do {
                try PrivateFiles.makeDirectory(directory)
            } catch {
                throw Self.cannotOpen(path, "\(error)")
            }
            return
        }
        guard status.st_mode & S_IFMT == S_IFDIR else { throw Self.cannotOpen(path, "it is not a directory") }
        guard status.st_uid == geteuid() else {
            throw Self.cannotOpen(path, "it belongs to user \(status.st_uid), not to user \(geteuid()) who runs this, so it cannot be made private; "
                + "run as its owner, or `chown -R \(geteuid()) \(path)`")
        }
        let exposed = status.st_mode & 0o077 != 0
        if exposed {
            try tighten(path, to: PrivateFiles.directoryMode, as: "the data directory", current: status.st_mode)
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        for name in Self.storeFiles + names.filter({ $0.hasPrefix(Self.uploadPrefix) }) {
            try tightenFile(directory.appendingPathComponent(name).path, as: name.hasPrefix(Self.uploadPrefix) ? "uploads being received" : name)
        }
        // Walking every blob costs a stat each: only when the directory was open to others (an
        // earlier version made it 0755), or the attachments directory is.
        let attachments = directory.appendingPathComponent("attachments")
        var inner = stat()
        if lstat(attachments.path, &inner) == 0, inner.st_mode & S_IFMT == S_IFDIR, exposed || inner.st_mode & 0o077 != 0 {
            try tightenTree(attachments)
        }
    }

    /// Ensures the database file exists with mode 0600 before SQLite opens it: SQLite creates
    /// its `-wal` and `-shm` files with the database file's mode.
    func createDatabaseFile(named name: String) throws {
        let path = directory.appendingPathComponent(name).path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, PrivateFiles.fileMode)
        guard descriptor >= 0 else { throw Self.cannotOpen(directory.path, "cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var status = stat()
        if fstat(descriptor, &status) == 0, status.st_mode & 0o777 != PrivateFiles.fileMode {
            guard fchmod(descriptor, PrivateFiles.fileMode) == 0 else {
                throw Self.cannotOpen(directory.path, "cannot make \(path) private: \(String(cString: strerror(errno)))")
            }
        }
    }

    private mutating func tightenFile(_ path: String, as label: String) throws {
        var status = stat()
        // Not following links: a link is not ours to change, and a regular file is all we make.
        guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_mode & 0o077 != 0 else { return }
        try tighten(path, to: PrivateFiles.fileMode, as: label, current: status.st_mode)
    }

    /// Every directory under `root` to 0700 and every file to 0600; counted per kind.
    private mutating func tightenTree(_ root: URL) throws {
        var directories = 0, files = 0
        var pending = [root.path]
        while let path = pending.popLast() {
            var status = stat()
            guard lstat(path, &status) == 0 else { continue }
            switch status.st_mode & S_IFMT {
            case S_IFDIR:
                if status.st_mode & 0o077 != 0 {
                    guard chmod(path, PrivateFiles.directoryMode) == 0 else { throw Self.cannotTighten(path, status) }
                    directories += 1
                }
                let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
                pending += names.map { (path as NSString).appendingPathComponent($0) }
            case S_IFREG where status.st_mode & 0o077 != 0:
                guard chmod(path, PrivateFiles.fileMode) == 0 else { throw Self.cannotTighten(path, status) }
                files += 1
            default:
                break
            }
        }
        if directories > 0 { changes.append("\(directories) attachment director\(directories == 1 ? "y" : "ies") → 0700") }
        if files > 0 { changes.append("\(files) attachment file\(files == 1 ? "" : "s") → 0600") }
    }

    private mutating func tighten(_ path: String, to mode: mode_t, as label: String, current: mode_t) throws {
        var status = stat()
        _ = lstat(path, &status)
        guard chmod(path, mode) == 0 else { throw Self.cannotTighten(path, status) }
        changes.append("\(label) \(String(current & 0o777, radix: 8)) → \(String(mode, radix: 8))")
    }

    private static func cannotTighten(_ path: String, _ status: stat) -> StoreError {
        let error = errno
        return .cannotOpen(path: path, reason: "it is open to other users (mode \(String(status.st_mode & 0o777, radix: 8))) and cannot be made private: "
            + "\(String(cString: strerror(error))); it belongs to user \(status.st_uid): run as that user, or `chown` it to user \(geteuid())")
    }

    private static func cannotOpen(_ path: String, _ reason: String) -> StoreError { .cannotOpen(path: path, reason: reason) }
}
