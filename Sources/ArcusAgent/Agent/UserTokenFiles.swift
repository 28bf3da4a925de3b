import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The copies of running agents' tokens kept for the user who runs them, so that the `arcus`
/// CLI, run as that user, finds the token of the agent it talks to without being told:
/// `$XDG_STATE_HOME/arcus/agents/<address>` (by default `~/.local/state/arcus/agents/…`), one
/// file per address the agent's API listens on, named `localhost:PORT` for an agent on a loopback
/// or wildcard address and `HOST:PORT` otherwise. The directory is 0700 and each file 0600, so
/// another local user can read none of them; the agent writes its file once it listens and
/// removes it when it stops (a file left by an agent that was killed is replaced by the next
/// agent on that port; an out-of-date one gets the CLI a 401 that says what to do).
public enum UserTokenFiles {
    /// Why a token file could not be written or read.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The file name for an API at `host:port`: loopback and wildcard addresses share the
    /// `localhost:PORT` name, as every local client reaches them through it.
    static func name(host: String, port: Int) -> String? {
        let host = host.lowercased()
        guard (1...65_535).contains(port), !host.isEmpty, !host.contains("/"), !host.hasPrefix("."), host.count <= 253 else { return nil }
        if host == "localhost" || ServedHosts.isLoopback(host) || ServedHosts.isWildcard(host) { return "localhost:\(port)" }
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The directory of `user`'s token files: `$XDG_STATE_HOME/arcus/agents` for this process's
    /// own user when that variable is set, else `<home>/.local/state/arcus/agents`, the home
    /// being the account's (so that root finds the files of the user an agent runs as).
    static func directory(forUser user: uid_t, environment: [String: String]) -> String? {
        let mine = user == geteuid()
        if mine, let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return (state as NSString).appendingPathComponent("arcus/agents")
        }
        // The account's home, not $HOME, which `sudo -u` may leave as the caller's.
        guard let home = homeDirectory(of: user) ?? (mine ? environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } : nil) else { return nil }
        return (home as NSString).appendingPathComponent(".local/state/arcus/agents")
    }

    /// Writes `token` for the API at `host:port` (replacing what an earlier agent on that address
    /// left); returns the file's path.
    static func publish(_ token: APIToken, host: String, port: Int, environment: [String: String]) throws(Failure) -> String {
        guard let name = name(host: host, port: port) else { throw Failure(description: "no token file name for \(host):\(port)") }
        guard let directory = directory(forUser: geteuid(), environment: environment) else {
            throw Failure(description: "this user has no home directory and XDG_STATE_HOME is not set")
        }
        try makePrivateDirectory(directory)
        let path = (directory as NSString).appendingPathComponent(name)
        let temporary = (directory as NSString).appendingPathComponent(".\(name).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp")
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw failure("creating", temporary) }
        defer { unlink(temporary) }
        let bytes = Array((token.hex + "\n").utf8)
        let written = bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == bytes.count, synced else { throw failure("writing", temporary) }
        // rename(2) replaces a file an agent killed earlier left on this address, atomically.
        guard rename(temporary, path) == 0 else { throw failure("creating", path) }
        return path
    }

    /// Removes the file at `path` if it still holds `token` (another agent may have taken the
    /// address since, and its file is not this agent's to remove).
    static func withdraw(_ path: String, token: APIToken) {
        guard case .found(let held) = read(path, owner: geteuid()), held == token else { return }
        unlink(path)
    }

    /// What reading a token file found.
    enum Lookup {
        case found(APIToken)
        /// No such file.
        case absent
        /// This user may not read it (another user's file).
        case forbidden
        /// It is not a token file this user can trust: the reason.
        case unusable(String)
    }

    /// The token in the file at `path`, which `owner` must own and no one else may read.
    static func read(_ path: String, owner: uid_t) -> Lookup {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else {
            switch errno {
            case ENOENT, ENOTDIR: return .absent
            case EACCES, EPERM: return .forbidden
            default: return .unusable(String(cString: strerror(errno)))
            }
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & mode_t(S_IFMT) == mode_t(S_IFREG) else { return .unusable("it is not a regular file") }
        guard status.st_uid == owner else { return .unusable("it belongs to uid \(status.st_uid), not to uid \(owner)") }
        guard status.st_mode & 0o077 == 0 else { return .unusable("others may read it (mode \(String(status.st_mode & 0o777, radix: 8)))") }
        var bytes = [UInt8](repeating: 0, count: 257)
        let count = bytes.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0, count <= 256, let token = APIToken(hex: String(decoding: bytes[..<count], as: UTF8.self)) else {
            return .unusable("it does not hold a token")
        }
        return .found(token)
    }

    /// Creates `path` and its missing parents with mode 0700; then `path` must be a directory of
    /// this user's that no one else may enter (tightened to 0700 if it is looser).
    private static func makePrivateDirectory(_ path: String) throws(Failure) {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST { throw failure("creating", prefix) }
        }
        var status = stat()
        guard lstat(path, &status) == 0, status.st_mode & mode_t(S_IFMT) == mode_t(S_IFDIR) else { throw Failure(description: "\(path) is not a directory") }
        guard status.st_uid == geteuid() else { throw Failure(description: "\(path) belongs to uid \(status.st_uid), not to this user") }
        if status.st_mode & 0o077 != 0 && chmod(path, 0o700) != 0 { throw failure("restricting", path) }
    }

    static func homeDirectory(of user: uid_t) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(user, &entry, &buffer, buffer.count, &result) == 0, result != nil, let home = entry.pw_dir else { return nil }
        let text = String(cString: home)
        return text.hasPrefix("/") ? text : nil
    }

    static func userName(of user: uid_t) -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(user, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else { return nil }
        return String(cString: name)
    }

    private static func failure(_ operation: String, _ path: String) -> Failure {
        Failure(description: "\(operation) \(path) failed: \(String(cString: strerror(errno)))")
    }
}
