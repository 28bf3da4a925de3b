import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which users own the TCP sockets listening on a port of this machine, from Linux's
/// `/proc/net/tcp` and `/proc/net/tcp6` (readable by every user; one line per socket, with its
/// local address, state and owner's uid).
///
/// Why: the CLI sends a token it found by itself only to a listener of the user who owns that
/// token. Were the agent stopped, another local user could listen on its port and wait for the
/// next `arcus status` to hand it the token.
enum ListeningSocketOwners {
    /// The owners of the listeners on `port` (IPv4 and IPv6), empty when nothing listens there;
    /// nil when the system does not say (no /proc, as on macOS).
    static func of(port: Int) -> Set<uid_t>? {
        var owners: Set<uid_t> = []
        var readAny = false
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            // Each line is under 200 bytes; a busy machine has thousands of sockets, not millions.
            guard let handle = FileHandle(forReadingAtPath: table), let data = try? handle.read(upToCount: 64 << 20) else { continue }
            try? handle.close()
            readAny = true
            owners.formUnion(listeners(in: String(decoding: data, as: UTF8.self), port: port))
        }
        return readAny ? owners : nil
    }

    /// The uids of the sockets in LISTEN state (0A) on `port` in one table's text:
    /// `sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid …`, the
    /// address as hex `ADDRESS:PORT`.
    static func listeners(in table: String, port: Int) -> [uid_t] {
        var owners: [uid_t] = []
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 7, fields[3] == "0A",
                  let colon = fields[1].lastIndex(of: ":"), Int(fields[1][fields[1].index(after: colon)...], radix: 16) == port,
                  let uid = uid_t(fields[7]) else { continue }
            owners.append(uid)
        }
        return owners
    }
}
