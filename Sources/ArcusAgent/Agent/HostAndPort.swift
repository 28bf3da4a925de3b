import Foundation

/// `HOST:PORT` as given to `--http`, `--listen` and `--peer`: a host name or address (an IPv6
/// address in brackets, `[::1]:4747`) and a port from 0 to 65535 (0: any free port, for binding).
public struct HostAndPort: Sendable, Hashable, CustomStringConvertible {
    public let host: String
    public let port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `text`; `option` names the flag in the error, so that the user knows which to fix.
    public init(parsing text: String, option: String) throws(CommandError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let host: Substring, portText: Substring
        if trimmed.hasPrefix("[") {
            guard let close = trimmed.firstIndex(of: "]"), trimmed[trimmed.index(after: close)...].hasPrefix(":") else {
                throw Self.invalid(text, option, "an IPv6 address goes in brackets, followed by :PORT")
            }
            host = trimmed[trimmed.index(after: trimmed.startIndex)..<close]
            portText = trimmed[trimmed.index(close, offsetBy: 2)...]
        } else {
            guard let colon = trimmed.lastIndex(of: ":") else { throw Self.invalid(text, option, "the port is missing") }
            host = trimmed[..<colon]
            portText = trimmed[trimmed.index(after: colon)...]
            if host.contains(":") { throw Self.invalid(text, option, "an IPv6 address goes in brackets") }
        }
        guard !host.isEmpty else { throw Self.invalid(text, option, "the host is missing") }
        guard host.allSatisfy({ $0.isLetter || $0.isNumber || ".-_:%".contains($0) }) else {
            throw Self.invalid(text, option, "the host has characters no host name or address has")
        }
        guard let port = Int(portText), (0...65535).contains(port) else {
            throw Self.invalid(text, option, "the port must be a number from 0 to 65535")
        }
        self.init(host: String(host), port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    private static func invalid(_ text: String, _ option: String, _ why: String) -> CommandError {
        CommandError("\(option) \(text.debugDescription) is not HOST:PORT (such as 127.0.0.1:4747): \(why)", exitStatus: 2)
    }
}
