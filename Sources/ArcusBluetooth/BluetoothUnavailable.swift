import Glibc

/// Why this machine cannot use Bluetooth, with what to do about it. L2CAP socket calls throw it
/// in place of the bare `SocketError` when errno says the radio, not the request, is the problem.
public enum BluetoothUnavailable: Error, Sendable, Hashable, CustomStringConvertible {
    /// socket(AF_BLUETOOTH) failed with EAFNOSUPPORT: the kernel has no Bluetooth stack loaded.
    case noKernelSupport
    /// EPERM or EACCES: the process lacks the capabilities that L2CAP sockets need.
    case notPermitted(SocketError)
    /// EACCES on connect: the link's security (pairing) was refused, by the peer or by the local
    /// stack when no pairing agent answered.
    case securityRefused(SocketError)
    /// EHOSTUNREACH or ENODEV on bind or connect: there is no adapter, or it is down.
    case noAdapter(SocketError)

    /// The unavailability that `error` of an L2CAP socket call means, or nil if it means none.
    public init?(_ error: SocketError) {
        switch (error.operation, error.errno) {
        case (.open, EAFNOSUPPORT): self = .noKernelSupport
        // On connect, EACCES is the link's security refused (pairing), not a missing capability.
        case (.connect, EACCES): self = .securityRefused(error)
        case (_, EPERM), (_, EACCES): self = .notPermitted(error)
        case (.bind, EHOSTUNREACH), (.bind, ENODEV), (.connect, EHOSTUNREACH), (.connect, ENODEV):
            self = .noAdapter(error)
        default: return nil
        }
    }

    private static let emulatedHint =
        "On a machine without a Bluetooth radio, `--ble-emulated DIR` runs the emulated radio instead (AF_UNIX sockets under DIR)."

    public var description: String {
        switch self {
        case .noKernelSupport:
            return "this kernel has no Bluetooth support (socket(AF_BLUETOOTH) failed with EAFNOSUPPORT). "
                + "To fix it, run a kernel built with CONFIG_BT (and CONFIG_BT_LE), load it with `modprobe bluetooth`, "
                + "then start bluetoothd. " + Self.emulatedHint
        case .notPermitted(let error):
            return "Bluetooth sockets are not permitted to this process (\(error)). "
                + "Grant it CAP_NET_ADMIN, which the kernel's management socket (adverts, scanning) needs "
                + "(e.g. `setcap cap_net_admin+ep` on the binary), or run it as a service user with it "
                + "(AmbientCapabilities=CAP_NET_ADMIN, as Hardware/systemd/arcus.service does). "
                + Self.emulatedHint
        case .securityRefused(let error):
            return "the Bluetooth link's security was refused (\(error)): a link at medium or high security needs pairing, "
                + "which needs a pairing agent at both ends; Arcus asks for low (its handshake authenticates and encrypts), "
                + "so the peer may be a different program, or an old Arcus asking for pairing"
        case .noAdapter(let error):
            return "no Bluetooth adapter is available (\(error)). "
                + "Check `btmgmt info` or `bluetoothctl list`: plug in or power on an adapter (`bluetoothctl power on`), "
                + "and check that `rfkill list` does not block it. " + Self.emulatedHint
        }
    }
}
