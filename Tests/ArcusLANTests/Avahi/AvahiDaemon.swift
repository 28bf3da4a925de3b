import CAvahi
import Foundation

/// Whether the tests have an avahi-daemon to talk to, and what to say when they do not.
enum AvahiDaemon {
    /// True when a client can connect now (no NO_FAIL: a missing daemon fails at once).
    static let answers: Bool = {
        guard let poll = avahi_threaded_poll_new() else { return false }
        defer { avahi_threaded_poll_free(poll) }
        var error: Int32 = 0
        guard let client = avahi_client_new(avahi_threaded_poll_get(poll), AvahiClientFlags(0), { _, _, _ in }, nil, &error)
        else { return false }
        avahi_client_free(client)
        return true
    }()

    /// CI must run these tests: there a missing daemon fails them instead of skipping them.
    static let required = ProcessInfo.processInfo.environment["CI"] == "true"

    static let missing = """
        avahi-daemon does not answer on the D-Bus system bus. Start it confined to loopback with \
        `Tools/start-avahi.sh start` (as root; `Tools/start-avahi.sh stop` undoes it), or run Tools/test.sh.
        """

    /// The loopback interface's index: the tests publish and browse there only.
    static let loopback = Int32(if_nametoindex("lo"))
}

extension AvahiDaemon {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Whether the running daemon is one Tools/start-avahi.sh started, which a test may restart;
    /// a system's own daemon is never touched.
    static var restartable: Bool {
        FileManager.default.fileExists(atPath: packageRoot.appendingPathComponent(".build/avahi-test/avahi.pid").path)
    }

    /// Stops the daemon and starts it again with the same configuration, as a package upgrade or
    /// a crash and systemd's restart would.
    static func restart() throws {
        let script = Process()
        script.executableURL = packageRoot.appendingPathComponent("Tools/start-avahi.sh")
        script.arguments = ["restart-daemon"]
        try script.run()
        script.waitUntilExit()
        guard script.terminationStatus == 0 else { throw RestartFailed(status: script.terminationStatus) }
    }

    struct RestartFailed: Error {
        var status: Int32
    }
}
