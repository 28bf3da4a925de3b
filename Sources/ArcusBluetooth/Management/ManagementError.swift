/// What went wrong on the management socket: a packet that breaks the format, or a command the
/// kernel refused, with its status and what to do about it.
public enum ManagementError: Error, Sendable, Hashable, CustomStringConvertible {
    case malformed(String)
    case refused(command: UInt16, status: ManagementStatus)
    /// The kernel did not answer a command in time.
    case noAnswer(command: UInt16)
    /// The management socket closed.
    case closed
    /// The kernel refused the command at send (some are while a controller is off).
    case notSent(command: UInt16, String)

    public var description: String {
        switch self {
        case .malformed(let what): return "a malformed management packet: \(what)"
        case .refused(let command, let status):
            return "the kernel refused management command 0x\(String(command, radix: 16)): \(status)"
        case .noAnswer(let command): return "the kernel did not answer management command 0x\(String(command, radix: 16))"
        case .closed: return "the Bluetooth management socket closed"
        case .notSent(let command, let why): return "the kernel refused management command 0x\(String(command, radix: 16)) at send: \(why)"
        }
    }
}

/// A command's status in Command Complete and Command Status events (mgmt-api.txt, "Error Codes").
public struct ManagementStatus: Sendable, Hashable, CustomStringConvertible {
    public var code: UInt8

    public init(code: UInt8) { self.code = code }

    public static let success = ManagementStatus(code: 0x00)
    public static let busy = ManagementStatus(code: 0x0A)
    public static let notSupported = ManagementStatus(code: 0x0C)
    public static let notPowered = ManagementStatus(code: 0x0F)
    public static let rfkilled = ManagementStatus(code: 0x12)
    public static let permissionDenied = ManagementStatus(code: 0x14)

    private static let names = [
        "Success", "Unknown Command", "Not Connected", "Failed", "Connect Failed", "Authentication Failed", "Not Paired",
        "No Resources", "Timeout", "Already Connected", "Busy", "Rejected", "Not Supported", "Invalid Parameters",
        "Disconnected", "Not Powered", "Cancelled", "Invalid Index", "RFKilled", "Already Paired", "Permission Denied",
    ]

    public var name: String { Int(code) < Self.names.count ? Self.names[Int(code)] : "status 0x\(String(code, radix: 16))" }

    /// The status, and for those a person can fix, how.
    public var description: String {
        switch self {
        case .notPowered: return "\(name): power the adapter on (btmgmt power on, or bluetoothctl power on)"
        case .rfkilled: return "\(name): the radio is blocked (rfkill unblock bluetooth)"
        case .permissionDenied: return "\(name): the management socket needs CAP_NET_ADMIN (see Hardware/Bluetooth.md)"
        case .notSupported: return "\(name): this controller cannot do it (see Hardware/Bluetooth.md for the boards' limits)"
        case .busy: return "\(name): another program (bluetoothd?) is discovering or advertising; it is retried"
        default: return name
        }
    }
}
