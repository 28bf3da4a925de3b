import ArcusMesh

/// One rule of the connection policy (`admission_allow`, `admission_deny` in the config): which
/// authenticated peers it names. It matches only what the handshake proved — the peer's id, and
/// its certificate's fields — never what a peer merely says of itself.
///
/// - `*`: every peer.
/// - `id:HEX`: the peer whose id is or starts with HEX (`arcus peers` shows ids).
/// - `name:GLOB`: a peer whose certificate names it so (`*` matches any run of characters); a
///   peer admitted by the shared secret has no certified name and matches no `name:` rule.
/// - `reads:COLLECTION`, `writes:COLLECTION`: a peer whose certificate lets it read (write) that
///   collection (a shared secret lets it do everything).
/// - `relay`: a peer whose certificate lets it relay others' writes.
struct AdmissionRule: Sendable, Hashable, CustomStringConvertible {
    enum Matcher: Sendable, Hashable {
        case everyone
        case id(String)
        case name(String)
        case reads(String)
        case writes(String)
        case relay
    }

    let matcher: Matcher
    let description: String

    /// Longest rule text taken; a config is trusted, but a glob's matching cost grows with it.
    static let longest = 256

    init(parsing text: String, key: String) throws(CommandError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        description = trimmed
        func bad(_ why: String) -> CommandError {
            CommandError("\(key): \(trimmed.debugDescription) \(why); a rule is *, id:HEX, name:GLOB, reads:COLLECTION, writes:COLLECTION or relay", exitStatus: 2)
        }
        guard trimmed.count <= Self.longest else { throw bad("is longer than \(Self.longest) characters") }
        if trimmed == "*" { matcher = .everyone; return }
        if trimmed == "relay" { matcher = .relay; return }
        guard let colon = trimmed.firstIndex(of: ":") else { throw bad("is not a rule") }
        let kind = trimmed[..<colon], value = String(trimmed[trimmed.index(after: colon)...])
        guard !value.isEmpty else { throw bad("names nothing after the colon") }
        switch kind {
        case "id":
            let hex = value.lowercased()
            guard hex.allSatisfy(\.isHexDigit), hex.count <= PeerID.size * 2 else { throw bad("is not a peer id (up to 32 hex digits)") }
            matcher = .id(hex)
        case "name": matcher = .name(value)
        case "reads": matcher = .reads(value)
        case "writes": matcher = .writes(value)
        default: throw bad("is of no kind known")
        }
    }

    func matches(_ peer: AuthenticatedPeer) -> Bool {
        switch matcher {
        case .everyone: true
        case .id(let prefix): peer.peerID.description.hasPrefix(prefix)
        case .name(let glob): peer.name.map { Self.glob(glob, matches: $0) } ?? false
        case .reads(let collection): peer.permissions.read.contains(collection)
        case .writes(let collection): peer.permissions.write.contains(collection)
        case .relay: peer.permissions.relay
        }
    }

    /// Whether `text` matches `pattern`, where `*` stands for any run of characters (no other
    /// wildcard). Greedy with one backtrack point: linear in practice, at worst their product.
    static func glob(_ pattern: String, matches text: String) -> Bool {
        let p = Array(pattern), t = Array(text)
        var i = 0, j = 0
        var star: Int?, resume = 0
        while j < t.count {
            if i < p.count, p[i] != "*", p[i] == t[j] {
                i += 1
                j += 1
            } else if i < p.count, p[i] == "*" {
                star = i
                resume = j
                i += 1
            } else if let s = star {
                i = s + 1
                resume += 1
                j = resume
            } else {
                return false
            }
        }
        while i < p.count, p[i] == "*" { i += 1 }
        return i == p.count
    }
}
