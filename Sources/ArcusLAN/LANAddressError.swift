/// Why a `host:port` could not be read, with the text as given and what to write instead, for a
/// person fixing a config file or a command line.
public enum LANAddressError: Error, Sendable, Hashable, CustomStringConvertible {
    case empty
    /// No `:port` after the host.
    case missingPort(String)
    /// Nothing before the `:`.
    case missingHost(String)
    case spaceInHost(String)
    /// The port is not a number from 1 to 65535 (0 to 65535 for an address to listen on).
    case invalidPort(String, port: String)
    /// An IPv6 address without brackets: its colons cannot be told from the port's.
    case bareIPv6(String)
    /// `[` without its `]`.
    case unclosedBracket(String)

    public var description: String {
        let example = "write host:port, such as 192.168.1.20:7400, gate-7.local:7400 or [fe80::1]:7400"
        switch self {
        case .empty:
            return "a peer address is empty: \(example)"
        case .missingPort(let text):
            return "\"\(text)\": the port is missing; \(example)"
        case .missingHost(let text):
            return "\"\(text)\" has no host before the port: \(example)"
        case .spaceInHost(let text):
            return "\"\(text)\" has a space in its host: \(example)"
        case .invalidPort(let text, let port):
            return "\"\(text)\" has the port \"\(port)\", which is not a number from 1 to 65535 (0 to 65535 for an address to listen on): \(example)"
        case .bareIPv6(let text):
            // Most likely an IPv6 address with the port after its last colon.
            let bracketed = text.lastIndex(of: ":").map { "[\(text[..<$0])]\(text[$0...])" } ?? "[fe80::1]:7400"
            return "\"\(text)\" has more than one colon: put an IPv6 address in brackets, as in \(bracketed)"
        case .unclosedBracket(let text):
            return "\"\(text)\" opens a bracket it does not close: \(example)"
        }
    }
}
