import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The token the CLI sends to an agent, and where it came from. Looked for, in order:
///
/// 1. `--token-file FILE` (such as the agent's `DIR/api-token`);
/// 2. `ARCUS_TOKEN`, the 64 hex digits themselves;
/// 3. for an agent on this machine, the copy the agent keeps for the user who runs it
///    (`UserTokenFiles`), used only when that user also owns the socket listening on the URL's
///    port (`ListeningSocketOwners`): as that user, or as root, `arcus …` just works.
///
/// Without any, requests go without a token: an agent that is not there is reported as such,
/// and one that is answers 401, to which `hint` adds what to do.
public struct AgentCredential: Sendable {
    public let token: APIToken?
    /// What to tell the user when the agent refuses the token (or its absence).
    public let hint: String

    public static func resolve(url: URL, tokenFile: String?, environment: [String: String]) throws(CommandError) -> AgentCredential {
        let give = "give the token with --token-file DIR/api-token (DIR: the agent's data directory) or ARCUS_TOKEN=<64 hex digits>"
        if let tokenFile {
            let token = try read(tokenFile)
            return AgentCredential(token: token, hint: "the token in \(tokenFile) (--token-file) is not this agent's; \(give) of the agent at \(url.absoluteString)")
        }
        if let text = environment["ARCUS_TOKEN"], !text.isEmpty {
            guard let token = APIToken(hex: text) else {
                throw CommandError("ARCUS_TOKEN is not an API token: it must be the 64 hex digits of the agent's DIR/api-token", exitStatus: 2)
            }
            return AgentCredential(token: token, hint: "the token in ARCUS_TOKEN is not this agent's; \(give)")
        }
        let host = url.host ?? ""
        let port = url.port ?? 80
        guard let name = UserTokenFiles.name(host: host, port: port) else {
            return AgentCredential(token: nil, hint: "arcus has no token for \(url.absoluteString): \(give)")
        }
        let me = geteuid()
        var owner = me
        if name.hasPrefix("localhost:"), let owners = ListeningSocketOwners.of(port: port) {
            guard !owners.isEmpty else {
                // Nothing listens: the request fails as "no agent at URL".
                return AgentCredential(token: nil, hint: "arcus has no token for \(url.absoluteString): \(give)")
            }
            guard owners.count == 1, let only = owners.first else {
                return AgentCredential(token: nil, hint: "processes of several users listen on port \(port), so arcus sends none of their tokens: \(give)")
            }
            owner = only
        }
        let who = owner == me ? "you" : "user \(UserTokenFiles.userName(of: owner) ?? String(owner)) (uid \(owner))"
        guard let directory = UserTokenFiles.directory(forUser: owner, environment: environment) else {
            return AgentCredential(token: nil, hint: "arcus cannot tell where \(who) keep agents' tokens (no home directory): \(give)")
        }
        let path = (directory as NSString).appendingPathComponent(name)
        switch UserTokenFiles.read(path, owner: owner) {
        case .found(let token):
            return AgentCredential(token: token, hint: """
                the token in \(path) is not this agent's (an agent that stopped without removing it?); \(give), \
                or restart the agent, which rewrites it
                """)
        case .absent:
            return AgentCredential(token: nil, hint: """
                the agent at \(url.absoluteString) runs as \(who), and no token for it is in \(path), where the agent keeps one \
                for its user: \(give)
                """)
        case .forbidden:
            return AgentCredential(token: nil, hint: """
                the agent at \(url.absoluteString) runs as \(who); only that user (or root) may read its token: run this as that user \
                (sudo -u \(UserTokenFiles.userName(of: owner) ?? "#\(owner)") arcus …) or with sudo, or \(give)
                """)
        case .unusable(let reason):
            return AgentCredential(token: nil, hint: "arcus does not use \(path): \(reason); \(give)")
        }
    }

    /// The token in the file the user named: their choice, so its mode is theirs to judge.
    private static func read(_ path: String) throws(CommandError) -> APIToken {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CommandError("cannot read the token file \(path) (--token-file): check that it exists and that you may read it (it is mode 0600, the agent's user's)", exitStatus: 2)
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: 257)) ?? Data()
        guard data.count <= 256, let token = APIToken(hex: String(decoding: data, as: UTF8.self)) else {
            throw CommandError("\(path) (--token-file) does not hold an API token: give the agent's DIR/api-token, 64 hex digits", exitStatus: 2)
        }
        return token
    }
}
