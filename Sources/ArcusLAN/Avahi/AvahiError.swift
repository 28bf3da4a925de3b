import CAvahi

/// An error code from libavahi-client, with what a person should do about it.
public struct AvahiError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `AVAHI_ERR_*` code (negative).
    public var code: Int32

    public init(code: Int32) {
        self.code = code
    }

    public static let noDaemon = AvahiError(code: Int32(AVAHI_ERR_NO_DAEMON))
    public static let disconnected = AvahiError(code: Int32(AVAHI_ERR_DISCONNECTED))
    /// What `avahi_client_new` says when it cannot connect to the D-Bus system bus at all.
    public static let dbusUnreachable = AvahiError(code: Int32(AVAHI_ERR_DBUS_ERROR))

    /// avahi's own words for the code.
    public var message: String { String(cString: avahi_strerror(code)) }

    public var description: String { "\(message) (avahi error \(code))" }

    /// The warning an agent shows when its client cannot reach the daemon or fails: what went
    /// wrong, that the rest of the agent goes on, and how to get discovery back.
    public var warning: String {
        switch self {
        case .noDaemon:
            "mDNS discovery is off: avahi-daemon is not running (or the D-Bus system bus is not). "
                + "Other transports and static peers still work. Start avahi-daemon "
                + "(systemctl start avahi-daemon, or Tools/start-avahi.sh in a container), "
                + "or give peers with --peer HOST:PORT."
        case .disconnected:
            "avahi-daemon went away (restarted or stopped): reconnecting; this agent is published "
                + "again and discovery resumes when the daemon is back."
        default:
            "mDNS discovery failed: \(self). Other transports and static peers still work; "
                + "give peers with --peer HOST:PORT until avahi-daemon is fixed."
        }
    }
}
