import ArcusMesh
import Foundation

/// `DIR/api-token`: the agent's `APIToken`, made on its first start, kept across restarts, as 64
/// hex digits and a newline in a file only the agent's user may read (mode 0600, through
/// `SecretFile`: created whole or not at all, never replacing one another process just made).
///
/// To change the token, stop the agent, remove the file and start it again. A file that others
/// may read, or that does not hold a token, stops the agent with what to do: the token would no
/// longer keep anyone out.
enum APITokenFile {
    static let name = "api-token"

    static func path(in dataDirectory: String) -> String {
        (dataDirectory as NSString).appendingPathComponent(name)
    }

    /// The token in `dataDirectory`, made first if there is none.
    static func load(orCreateIn dataDirectory: String) throws(CommandError) -> APIToken {
        let path = path(in: dataDirectory)
        if let token = try read(path) { return token }
        let token = APIToken.random()
        do {
            if try SecretFile.create(Array((token.hex + "\n").utf8), at: path) { return token }
        } catch {
            throw CommandError("cannot create the API token file \(path): \(error)")
        }
        // Another process made it between the read and the create: theirs is the token.
        guard let token = try read(path) else { throw CommandError("\(path) vanished while the agent created it; start the agent again") }
        return token
    }

    private static func read(_ path: String) throws(CommandError) -> APIToken? {
        let bytes: [UInt8]?
        do throws(SecretFileError) {
            bytes = try SecretFile.read(at: path, maximumBytes: 256)
        } catch .tooOpen(let path, let mode) {
            throw CommandError("""
                \(path) has mode \(String(mode & 0o777, radix: 8)), but it holds the HTTP API's token, so only the agent's user may read it: \
                remove it (the agent makes a new token at start), or run `chmod 600 \(path)` if no one else can have read it
                """)
        } catch {
            throw CommandError("cannot use the API token file: \(error)")
        }
        guard let bytes else { return nil }
        guard let token = APIToken(hex: String(decoding: bytes, as: UTF8.self)) else {
            throw CommandError("\(path) does not hold an API token (64 hex digits); remove it and the agent makes a new one at start")
        }
        return token
    }
}
