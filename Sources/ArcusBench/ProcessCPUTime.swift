import Foundation

/// The processor time a process has used so far, user and system, from /proc/PID/stat
/// (Linux): what a catch-up costs a device's cores, which a wall-clock rate on a shared
/// machine does not say.
enum ProcessCPUTime {
    /// Seconds of processor time `pid` has used; nil once it has gone, or where /proc has no
    /// such file.
    static func seconds(pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")  // the name, in parentheses, may hold spaces
        else { return nil }
        // After the name: state (field 3) … utime (field 14), stime (field 15), in clock ticks.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
