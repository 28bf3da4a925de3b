import ArcusAgent
import Foundation

/// A cgroup that holds one process to a share of one CPU and a memory limit, as a small board
/// would (`arcus bench lan --confine-follower`): cgroup v2 (`cpu.max`, `memory.max`) when
/// /sys/fs/cgroup is the unified hierarchy, else cgroup v1's `cpu` and `memory` controllers
/// (`cpu.cfs_quota_us`, `memory.limit_in_bytes`). Needs root (or a delegated hierarchy).
///
/// The process is put in it as it starts (`wrap`), before it has allocated anything, so that all
/// it ever uses is charged here. `remove()` once it has exited.
struct ConfinementCgroup {
    enum Hierarchy: String {
        case v1 = "cgroup v1"
        case v2 = "cgroup v2"
    }

    struct Limits {
        /// The CPU time allowed per `periodMicroseconds`: 25,000 of 100,000 is a quarter of one core.
        var quotaMicroseconds = 25_000
        var periodMicroseconds = 100_000
        var memoryBytes = 256 << 20

        var description: String {
            "\(Double(quotaMicroseconds) / Double(periodMicroseconds)) of a core, \(memoryBytes >> 20) MiB"
        }
    }

    let hierarchy: Hierarchy
    let limits: Limits
    /// The cgroup's directories: one (v2), or the cpu and the memory controller's (v1).
    private let directories: [String]
    private var memoryDirectory: String { directories.last! }

    static let systemRoot = "/sys/fs/cgroup"

    /// Makes the cgroup `name` with `limits` under `root` (the cgroup file system). Throws,
    /// saying what to do, where cgroups cannot be made there: no cgroup file system, no cpu or
    /// memory controller, not allowed.
    init(name: String, limits: Limits, root: String = Self.systemRoot) throws {
        self.limits = limits
        let files = FileManager.default
        if files.fileExists(atPath: root + "/cgroup.controllers") {
            hierarchy = .v2
            let available = (try? String(contentsOfFile: root + "/cgroup.controllers", encoding: .utf8)) ?? ""
            for controller in ["cpu", "memory"] where !available.split(whereSeparator: \.isWhitespace).contains(Substring(controller)) {
                throw BenchError("cgroup v2 at \(root) offers no \(controller) controller (cgroup.controllers: \(available.trimmingCharacters(in: .whitespacesAndNewlines)))")
            }
            // Children get the controllers only if the root hands them down.
            try Self.write("+cpu +memory", to: root + "/cgroup.subtree_control")
            directories = [root + "/" + name]
        } else if files.fileExists(atPath: root + "/cpu/cpu.cfs_quota_us"), files.fileExists(atPath: root + "/memory/memory.limit_in_bytes") {
            hierarchy = .v1
            directories = [root + "/cpu/" + name, root + "/memory/" + name]
        } else {
            throw BenchError("""
                no cgroups to confine the follower in: \(root) has neither cgroup v2 (cgroup.controllers) nor cgroup v1's \
                cpu and memory controllers (cpu/cpu.cfs_quota_us, memory/memory.limit_in_bytes); mount them, or run without --confine-follower
                """)
        }
        for directory in directories {
            do {
                try files.createDirectory(atPath: directory, withIntermediateDirectories: false)
            } catch {
                throw BenchError("cannot make the cgroup \(directory) (\(error.localizedDescription)): --confine-follower needs root, or a cgroup hierarchy delegated to this user")
            }
        }
        do {
            switch hierarchy {
            case .v2:
                try Self.write("\(limits.quotaMicroseconds) \(limits.periodMicroseconds)", to: directories[0] + "/cpu.max")
                try Self.write("\(limits.memoryBytes)", to: directories[0] + "/memory.max")
                // Without swap to go to, what passes the limit is reclaimed or the process is killed.
                if files.fileExists(atPath: directories[0] + "/memory.swap.max") { try Self.write("0", to: directories[0] + "/memory.swap.max") }
            case .v1:
                try Self.write("\(limits.periodMicroseconds)", to: directories[0] + "/cpu.cfs_period_us")
                try Self.write("\(limits.quotaMicroseconds)", to: directories[0] + "/cpu.cfs_quota_us")
                try Self.write("\(limits.memoryBytes)", to: directories[1] + "/memory.limit_in_bytes")
            }
        } catch {
            remove()
            throw error
        }
    }

    /// `command`, run through /bin/sh so that the shell moves itself into the cgroup and then
    /// becomes the command (exec): the same process, confined from its first instruction.
    func wrap(_ command: [String]) -> [String] {
        let enter = directories.map { "echo $$ > '\($0)/cgroup.procs'" }.joined(separator: " && ")
        return ["/bin/sh", "-c", enter + " && exec \"$@\"", "arcus-confined"] + command
    }

    /// The most memory the cgroup was charged at once, in bytes: its processes' memory and the
    /// page cache of the files they wrote (`memory.max_usage_in_bytes`; v2's `memory.peak`, on
    /// Linux 5.19 and later). Nil where the kernel keeps no such figure.
    var peakMemoryBytes: Int? {
        let file = hierarchy == .v1 ? "/memory.max_usage_in_bytes" : "/memory.peak"
        return (try? String(contentsOfFile: memoryDirectory + file, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// How many processes the kernel's OOM killer killed in the cgroup (`oom_kill` in v1's
    /// `memory.oom_control`, Linux 4.13 and later, or in v2's `memory.events`).
    var oomKills: Int? {
        let file = hierarchy == .v1 ? "/memory.oom_control" : "/memory.events"
        guard let text = try? String(contentsOfFile: memoryDirectory + file, encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first { $0.hasPrefix("oom_kill ") }
        return line.flatMap { Int($0.dropFirst("oom_kill ".count)) }
    }

    /// Removes the cgroup's directories; its processes must have exited.
    func remove() {
        for directory in directories { rmdir(directory) }
    }

    private static func write(_ text: String, to path: String) throws {
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw BenchError("cannot open \(path) to write \(text.debugDescription): --confine-follower needs root, or a delegated cgroup hierarchy")
        }
        defer { try? handle.close() }
        do {
            try handle.write(contentsOf: Data(text.utf8))
        } catch {
            throw BenchError("the kernel refused \(text.debugDescription) in \(path): \(error.localizedDescription)")
        }
    }
}
