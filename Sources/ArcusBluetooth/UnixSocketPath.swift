import Glibc

/// The path of an AF_UNIX socket, checked to fit sun_path (108 bytes with its NUL), since a
/// longer one would be cut by the kernel and name another file.
public struct UnixSocketPath: Sendable, Hashable, CustomStringConvertible {
    public let path: String

    public static let maximumBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    public init(_ path: String) throws(UnixSocketPathTooLong) {
        guard path.utf8.count <= Self.maximumBytes else {
            throw UnixSocketPathTooLong(path: path, maximumBytes: Self.maximumBytes)
        }
        self.path = path
    }

    public var description: String { path }

    var sockaddr: sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        return address
    }
}

/// A socket path longer than sun_path holds.
public struct UnixSocketPathTooLong: Error, Sendable, Hashable, CustomStringConvertible {
    public let path: String
    public let maximumBytes: Int

    public var description: String {
        "the socket path \(path) is \(path.utf8.count) bytes, over the \(maximumBytes) bytes that AF_UNIX allows (sun_path): "
            + "choose a shorter directory for the emulated radio, e.g. under /tmp"
    }
}
