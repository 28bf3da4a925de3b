import Foundation
import Glibc
import Synchronization

/// A TCP port on 127.0.0.1 that nothing holds, for a server the test starts next.
///
/// Drawn below the kernel's ephemeral range (`net.ipv4.ip_local_port_range`), where the local
/// port of every outgoing connection comes from. A port that bind(0) gave out and the test
/// released could otherwise be taken by another test's connect() before its server bound it:
/// CI saw an agent fail with "Address already in use" so, among 263 tests at once. Never the
/// same port twice in one process.
public func freePort() throws -> Int {
    let ephemeral = ephemeralPortsStart()
    let candidates = ephemeral - 1024 > 4096 ? max(1024, ephemeral - 16384)..<ephemeral : 1024..<ephemeral
    for _ in 0..<500 {
        let port = Int.random(in: candidates)
        let fresh = portsGivenOut.withLock { $0.insert(port).inserted }
        if fresh, canBind(port) { return port }
    }
    throw NoFreePort(range: candidates)
}

/// Every port between `range` was taken, or given out before in this process.
public struct NoFreePort: Error, CustomStringConvertible {
    public let range: Range<Int>
    public var description: String { "no free TCP port on 127.0.0.1 in \(range.lowerBound)–\(range.upperBound - 1)" }
}

private let portsGivenOut = Mutex<Set<Int>>([])

/// The first port of the kernel's ephemeral range; Linux's default when it cannot be read.
private func ephemeralPortsStart() -> Int {
    let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
    return text?.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32768
}

/// Whether a listening socket could bind 127.0.0.1:`port` now (no SO_REUSEADDR: a port that
/// a closing connection still holds counts as taken).
private func canBind(_ port: Int) -> Bool {
    LoopbackAddress.succeeds(port: port) { socket, address, length in bind(socket, address, length) }
}
