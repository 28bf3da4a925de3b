import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The names a request's `Host` may give for the HTTP API to answer it: a loopback name
/// (`localhost`, an address in 127.0.0.0/8, `[::1]`, with any port), plus, when the operator
/// exposed the API beyond this machine (`--http-expose`), the address it listens on — any IP
/// address when that is a wildcard such as 0.0.0.0.
///
/// Why: a web page can make a browser send it requests through a name it controls that it
/// re-points at 127.0.0.1 (DNS rebinding); that request then counts as the page's own origin, so
/// the browser lets the page read the answer. Its `Host` still carries the page's name, which is
/// not one of these. An IP address cannot be re-pointed, so allowing addresses is safe.
struct ServedHosts: Sendable {
    /// What `--http-expose` added, besides the loopback names.
    enum Exposure: Sendable, Equatable {
        case none
        /// One name or address, as given to `--http` (lowercased).
        case host(String)
        /// A wildcard listen address: any IP address of this machine.
        case anyAddress
    }

    let exposure: Exposure

    init(http: String, exposed: Bool) {
        guard exposed, !Self.isLoopback(http) else {
            exposure = .none
            return
        }
        exposure = Self.isWildcard(http) ? .anyAddress : .host(http.lowercased())
    }

    /// Whether a request whose `Host` is `authority` (`host[:port]`, an IPv6 host in brackets) is
    /// addressed to this agent.
    func allows(authority: String) -> Bool {
        guard let host = Self.host(ofAuthority: authority) else { return false }
        if Self.isLoopback(host) { return true }
        switch exposure {
        case .none: return false
        case .anyAddress: return Self.address(host) != nil
        case .host(let name):
            if let mine = Self.address(name), let theirs = Self.address(host) { return mine == theirs }
            return host == name
        }
    }

    /// The host part of `host[:port]` or `[v6][:port]`, lowercased; nil when it is not that shape.
    static func host(ofAuthority authority: String) -> String? {
        let text = authority.lowercased()
        let host: Substring, rest: Substring
        if text.hasPrefix("[") {
            guard let closing = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<closing]
            rest = text[text.index(after: closing)...]
        } else if let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            rest = text[colon...]
        } else {
            host = text[...]
            rest = ""
        }
        if !rest.isEmpty {
            let port = rest.dropFirst()
            guard rest.first == ":", !port.isEmpty, port.count <= 5, port.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        }
        guard !host.isEmpty, !host.contains(where: { $0.isWhitespace || $0 == "/" || $0 == "@" }) else { return nil }
        return String(host)
    }

    /// `localhost`, an IPv4 address in 127.0.0.0/8, `::1` or an IPv4-mapped 127.x address.
    static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" { return true }
        switch address(host) {
        case .v4(let bytes)?: return bytes[0] == 127
        case .v6(let bytes)?:
            if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
            // ::ffff:127.x.y.z
            return bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
        case nil: return false
        }
    }

    /// 0.0.0.0 or `::`: every address of this machine.
    static func isWildcard(_ host: String) -> Bool {
        switch address(host) {
        case .v4(let bytes)?: return bytes.allSatisfy { $0 == 0 }
        case .v6(let bytes)?: return bytes.allSatisfy { $0 == 0 }
        case nil: return false
        }
    }

    enum Address: Equatable {
        case v4([UInt8])
        case v6([UInt8])
    }

    /// The address `host` spells as an IP literal (dotted quad, or IPv6 without brackets).
    static func address(_ host: String) -> Address? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            return .v4(withUnsafeBytes(of: &v4) { Array($0) })
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            return .v6(withUnsafeBytes(of: &v6) { Array($0) })
        }
        return nil
    }
}
