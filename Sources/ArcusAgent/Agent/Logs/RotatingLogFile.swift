import ArcusCodec
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The agent's log in its data directory, for field support where no journal keeps it:
/// `logs/arcus.log`, and when it reaches `fileBytes` it is compressed (Zstandard) into
/// `logs/arcus.log.1.zst`, the older ones moving up to `arcus.log.<files>.zst`, past which the
/// oldest goes. Disk use stays under about `fileBytes` plus `files` compressed copies of it.
public final class RotatingLogFile: Sendable {
    public struct Limits: Sendable, Equatable {
        /// The size at which the current file is compressed and a new one begun.
        public var fileBytes = 1 << 20
        /// How many compressed files are kept.
        public var files = 5

        public static let fileBytesRange = (64 << 10)...(1 << 30)
        public static let filesRange = 1...100

        public init() {}
    }

    public static let currentName = "arcus.log"
    public let directory: String
    public let limits: Limits

    private struct State {
        var descriptor: Int32
        var size: Int
        var failure: String?
    }

    private let state: Mutex<State>

    public init(directory: String, limits: Limits = Limits()) throws(CommandError) {
        self.directory = directory
        self.limits = limits
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw CommandError("cannot make the log directory \(directory): \(error)")
        }
        let path = (directory as NSString).appendingPathComponent(Self.currentName)
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CommandError("cannot open the log file \(path): \(String(cString: strerror(errno)))") }
        state = Mutex(State(descriptor: descriptor, size: Int(lseek(descriptor, 0, SEEK_END))))
        // The log names peers, addresses and queries: private, as the rest of the data directory,
        // even where an earlier version or a hand left it open.
        _ = chmod(directory, 0o700)
        _ = fchmod(descriptor, 0o600)
        for index in 1...limits.files { _ = chmod(rotatedPath(index), 0o600) }
    }

    deinit { state.withLock { close($0.descriptor) } }

    /// The path of the `index`th compressed file (1 is the newest).
    public func rotatedPath(_ index: Int) -> String {
        (directory as NSString).appendingPathComponent("\(Self.currentName).\(index).zst")
    }

    public var currentPath: String { (directory as NSString).appendingPathComponent(Self.currentName) }

    /// Appends `line` (which ends with a newline), rotating first when it would not fit.
    public func append(_ line: String) {
        state.withLock { state in
            let bytes = Array(line.utf8)
            if state.size > 0, state.size + bytes.count > limits.fileBytes { rotate(&state) }
            let written = bytes.withUnsafeBytes { write(state.descriptor, $0.baseAddress, $0.count) }
            if written > 0 { state.size += written }
        }
    }

    /// Compresses the current file into `.1.zst` (moving the others up), then empties it. A
    /// failure (a full disk) keeps appending to the current file rather than lose lines.
    private func rotate(_ state: inout State) {
        guard let content = FileManager.default.contents(atPath: currentPath),
              let compressed = FrameCompression.compress(Array(content)) else { return }
        try? FileManager.default.removeItem(atPath: rotatedPath(limits.files))
        for index in stride(from: limits.files - 1, through: 1, by: -1) where FileManager.default.fileExists(atPath: rotatedPath(index)) {
            _ = rename(rotatedPath(index), rotatedPath(index + 1))
        }
        let staging = rotatedPath(1) + ".new"
        guard FileManager.default.createFile(atPath: staging, contents: Data(compressed), attributes: [.posixPermissions: 0o600]),
              rename(staging, rotatedPath(1)) == 0 else { return }
        _ = ftruncate(state.descriptor, 0)
        state.size = 0
    }

    /// The last `count` lines, oldest first, from the current file and as many compressed ones
    /// as needed. Reading stops at a compressed file that does not expand to at most twice
    /// `fileBytes`, so the lines returned never skip a gap.
    public func recentLines(_ count: Int) -> [String] {
        state.withLock { _ in
            // Newest file first; each file's lines go before those already read.
            var lines: [Substring] = []
            var source = FileManager.default.contents(atPath: currentPath).map(Array.init)
            var index = 1
            while let bytes = source {
                lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n") + lines
                guard lines.count < count, index <= limits.files else { break }
                source = FileManager.default.contents(atPath: rotatedPath(index)).flatMap {
                    try? FrameCompression.decompress(Array($0), atMost: 2 * limits.fileBytes)
                }
                index += 1
            }
            return lines.suffix(count).map(String.init)
        }
    }
}
