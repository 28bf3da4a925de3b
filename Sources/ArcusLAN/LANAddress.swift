/// Where a LAN peer listens: a host (a name, an IPv4 address or an IPv6 address) and a TCP port.
/// Written `host:port`, with an IPv6 address in brackets: `192.168.1.20:7400`, `[fe80::1]:7400`,
/// `gate-7.local:7400`. It is the address of every `.lan` `TransportEndpoint`.
public struct LANAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    /// 0 only for a listener that lets the system choose.
    public var port: Int

    public init(host: String, port: Int) {
        precondition((0...65_535).contains(port), "a TCP port is between 0 and 65535")
        self.host = host
        self.port = port
    }

    /// Reads `host:port`, as written in a config file or on the command line: for a peer to dial
    /// the port must be 1 to 65535; an address to listen on (`listening`) may also take 0, any
    /// free port. Throws a `LANAddressError` that says what is wrong and what to write instead.
    public init(parsing text: String, listening: Bool = false) throws(LANAddressError) {
        let text = text.trimmingWhitespace
        guard !text.isEmpty else { throw .empty }
        let host: Substring, portText: Substring
        if text.hasPrefix("[") {
            guard let closing = text.firstIndex(of: "]") else { throw .unclosedBracket(text) }
            host = text[text.index(after: text.startIndex)..<closing]
            let rest = text[text.index(after: closing)...]
            guard rest.hasPrefix(":") else { throw .missingPort(text) }
            portText = rest.dropFirst()
        } else {
            let colons = text.filter { $0 == ":" }.count
            if colons == 0 { throw .missingPort(text) }
            if colons > 1 { throw .bareIPv6(text) }
            let colon = text.firstIndex(of: ":")!
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty else { throw .missingHost(text) }
        guard !host.contains(where: \.isWhitespace) else { throw .spaceInHost(text) }
        guard !portText.isEmpty else { throw .missingPort(text) }
        guard portText.allSatisfy(\.isASCIIDigit), portText.count <= 5, let port = Int(portText), ((listening ? 0 : 1)...65_535).contains(port) else {
            throw .invalidPort(text, port: String(portText))
        }
        self.init(host: String(host), port: port)
    }

    /// `host:port`, with an IPv6 host in brackets: what `init(parsing:)` reads back.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
