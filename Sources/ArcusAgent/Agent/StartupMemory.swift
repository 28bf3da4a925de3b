#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import ServiceLifecycle

/// Hands back to the kernel the pages of code and read-only data that starting up touched.
///
/// Starting touches far more of the binary and the Swift libraries than an idle agent runs (the
/// runtime's conformance tables, argument parsing, opening the store, starting each transport),
/// and the kernel maps 64 KiB around every page a fault reads, so a freshly started agent has
/// about 40 MB of file pages resident, of which an idle one uses about 12. Advising the kernel
/// to page out the private read-only file mappings (`MADV_PAGEOUT`, Linux 5.4) drops the pages
/// nothing uses any more; the ones the agent runs fault back in from the page cache or the
/// disk. It changes no data: only clean file-backed pages are advised, which the kernel
/// would reclaim under memory pressure anyway.
enum StartupMemory {
    /// `MADV_PAGEOUT` from <linux/mman.h>, which older C libraries do not name.
    static let pageOut: Int32 = 21

    struct Mapping {
        let start: UInt, end: UInt
        let path: String
    }

    /// The private, read-only, file-backed mappings of this process, from /proc/self/maps.
    static func readOnlyFileMappings(_ maps: String) -> [Mapping] {
        maps.split(separator: "\n").compactMap { line in
            // start-end perms offset dev inode path
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6 else { return nil }
            let perms = Array(fields[1].utf8)
            let path = fields[5].trimmingCharacters(in: .whitespaces)
            guard perms.count == 4, perms[1] != UInt8(ascii: "w"), perms[3] == UInt8(ascii: "p"), path.hasPrefix("/"),
                  !path.hasSuffix(" (deleted)") else { return nil }
            let bounds = fields[0].split(separator: "-")
            guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16), end > start else { return nil }
            return Mapping(start: start, end: end, path: path)
        }
    }

    /// Advises every such mapping; returns the bytes advised, or why none could be.
    static func release() -> Result<Int, StartupMemoryError> {
        guard let maps = procFile("/proc/self/maps") else {
            return .failure(StartupMemoryError(description: "cannot read /proc/self/maps"))
        }
        var advised = 0
        for mapping in readOnlyFileMappings(maps) {
            guard let address = UnsafeMutableRawPointer(bitPattern: mapping.start) else { continue }
            if madvise(address, Int(mapping.end - mapping.start), pageOut) == 0 {
                advised += Int(mapping.end - mapping.start)
            } else if errno == EINVAL {
                return .failure(StartupMemoryError(description: "this kernel does not know MADV_PAGEOUT (it needs Linux 5.4 or later)"))
            }
        }
        return .success(advised)
    }

    /// A /proc file, read to its end: such a file has no size, and a read of "the file's size"
    /// (as `String(contentsOfFile:)` does) stops after its first page.
    static func procFile(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.readToEnd() else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// This process's resident set, in bytes (from /proc/self/statm), or nil.
    static var residentBytes: Int? {
        guard let statm = procFile("/proc/self/statm") else { return nil }
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

struct StartupMemoryError: Error, CustomStringConvertible {
    let description: String
}

/// Releases the start-up pages once the agent has settled (`release_startup_memory`).
struct StartupMemoryService: Service {
    /// Long enough for the first sessions and discovery to have started.
    static let settle = Duration.seconds(10)

    let logger: Logger

    func run() async throws {
        try? await cancelWhenGracefulShutdown {
            try await Task.sleep(for: Self.settle)
            let before = StartupMemory.residentBytes
            switch StartupMemory.release() {
            case .success:
                let after = StartupMemory.residentBytes
                logger.info("returned the pages start-up touched to the kernel", metadata: [
                    "rss_before_mb": "\(before.map { String(format: "%.1f", Double($0) / 1e6) } ?? "?")",
                    "rss_after_mb": "\(after.map { String(format: "%.1f", Double($0) / 1e6) } ?? "?")",
                ])
            case .failure(let error):
                logger.info("start-up pages stay resident: \(error) (set release_startup_memory = false to skip this)")
            }
            try await gracefulShutdown()
        }
    }
}
