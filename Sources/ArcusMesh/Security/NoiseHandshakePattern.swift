/// A Noise handshake pattern that `NoiseHandshakeState` runs: XX (the Noise Protocol Framework,
/// revision 34, §7.5), alone or with pre-shared-key modifiers (§9). The mesh uses `xx` with
/// certificates and `xxPSK0` with a shared secret; the other modifiers exist so that published
/// test vectors that combine psk0 with others (`XXpsk0+psk1+psk2+psk3`) check the same code.
///
/// ```
/// XX:       → e                 XXpsk0:   → psk, e
///           ← e, ee, s, es                ← e, ee, s, es
///           → s, se                       → s, se
/// ```
struct NoiseHandshakePattern: Sendable, Hashable, CustomStringConvertible {
    /// One step of a handshake message (§7.1, §9.1).
    enum Token: Sendable, Hashable {
        case e, s, ee, es, se, psk
    }

    /// The pattern's name as a Noise protocol name spells it: "XX", "XXpsk0", "XXpsk0+psk2".
    let name: String
    /// The tokens of each handshake message in turn; the initiator writes the even ones.
    let messages: [[Token]]

    var description: String { name }

    /// Whether the pattern mixes in pre-shared keys; the `e` token then also feeds the chaining
    /// key (§9.2), so that nothing is encrypted under a key that depends on the pre-shared key alone.
    var usesPresharedKeys: Bool { presharedKeyCount > 0 }

    /// How many pre-shared keys a handshake of this pattern takes, in token order.
    var presharedKeyCount: Int { messages.joined().filter { $0 == .psk }.count }

    static let xx = NoiseHandshakePattern(name: "XX", messages: [[.e], [.e, .ee, .s, .es], [.s, .se]])
    static let xxPSK0 = NoiseHandshakePattern(name: "XX", presharedKeyPositions: [0])

    private init(name: String, messages: [[Token]]) {
        self.name = name
        self.messages = messages
    }

    /// XX with a pre-shared key at each of `positions` (0 to 3, ascending, each once): psk0 opens
    /// the first message, pskN ends message N (§9.1).
    private init(name: String, presharedKeyPositions positions: [Int]) {
        var messages = Self.xx.messages
        for position in positions {
            if position == 0 { messages[0].insert(.psk, at: 0) } else { messages[position - 1].append(.psk) }
        }
        self.init(name: name + positions.map { "psk\($0)" }.joined(separator: "+"), messages: messages)
    }

    /// The pattern a Noise protocol name's pattern part spells ("XX", "XXpsk0",
    /// "XXpsk0+psk1+psk2+psk3"); nil for any other pattern or a malformed modifier list.
    init?(name: String) {
        guard name.hasPrefix("XX") else { return nil }
        let modifiers = name.dropFirst(2)
        if modifiers.isEmpty {
            self = .xx
            return
        }
        var positions: [Int] = []
        for modifier in modifiers.split(separator: "+", omittingEmptySubsequences: false) {
            guard modifier.hasPrefix("psk"), let position = Int(modifier.dropFirst(3)), String(position) == modifier.dropFirst(3),
                  (0...Self.xx.messages.count).contains(position), position > (positions.last ?? -1)
            else { return nil }
            positions.append(position)
        }
        self.init(name: "XX", presharedKeyPositions: positions)
    }
}
