import Foundation
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// Tells systemd how the service is doing, as `sd_notify(3)` does, for a unit of `Type=notify`:
/// `READY=1` once the API listens, `STOPPING=1` when shutdown begins, a `STATUS=` line, and
/// `WATCHDOG=1` while the unit asks for it (`WatchdogSec=`). The protocol is one datagram per
/// message to the AF_UNIX socket named in `NOTIFY_SOCKET` (a path, or `@` for the abstract
/// namespace); without that variable — not under systemd — every call does nothing.
///
/// Written here rather than linked from libsystemd: the protocol is a single `sendto`, and the
/// agent then runs the same on systems without libsystemd's headers.
public struct SystemdNotifier: Sendable {
    private let socketPath: String?
    /// How often systemd wants `WATCHDOG=1`: half its `WATCHDOG_USEC`, as sd_watchdog_enabled(3)
    /// advises; nil when the unit has no watchdog, or it is meant for another process.
    public let watchdogInterval: Duration?

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        let forThisProcess = environment["WATCHDOG_PID"].map { $0 == String(getpid()) } ?? true
        if path != nil, forThisProcess, let text = environment["WATCHDOG_USEC"], let microseconds = Int64(text), microseconds > 0 {
            watchdogInterval = .microseconds(microseconds / 2)
        } else {
            watchdogInterval = nil
        }
    }

    /// Whether the process runs under a systemd unit that listens.
    public var isActive: Bool { socketPath != nil }

    public func ready(status: String) { send("READY=1\nSTATUS=\(status)") }
    public func stopping() { send("STOPPING=1\nSTATUS=stopping") }
    public func watchdog() { send("WATCHDOG=1") }

    /// Sends one notification; failures are ignored, as sd_notify's callers do: the service
    /// works the same whether or not systemd heard.
    @discardableResult
    public func send(_ message: String) -> Bool {
        guard let socketPath else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        // A leading '@' names the abstract namespace, where the path starts with a zero byte.
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count)
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bytes.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, length) }
            }
        }
        return sent == bytes.count
    }
}

/// The notifier as a service of the agent's group: it feeds the unit's watchdog while the agent
/// runs and says STOPPING=1 when graceful shutdown begins.
struct SystemdService: Service {
    let notifier: SystemdNotifier

    func run() async throws {
        if let interval = notifier.watchdogInterval {
            // As long as this loop turns, the process is not wedged; shutdown cancels its sleep.
            try? await cancelWhenGracefulShutdown {
                while true {
                    notifier.watchdog()
                    try await Task.sleep(for: interval)
                }
            }
        } else {
            try? await gracefulShutdown()
        }
        notifier.stopping()
    }
}
