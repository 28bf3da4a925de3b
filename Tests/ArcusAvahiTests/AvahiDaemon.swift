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
