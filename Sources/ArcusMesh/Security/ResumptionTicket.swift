import Crypto
import Foundation

/// What two peers keep after a handshake so that their next link costs a few bytes instead of a
/// full handshake: a secret only they hold, the public id that names it, and the peer as the
/// full handshake authenticated it.
///
/// A ticket is used once. Resuming with it gives the link's keys and the next ticket, both derived
/// from its secret with HKDF, and both ends then forget it: a ratchet, so a ticket stolen later
/// opens no earlier link (forward secrecy for every link of the chain), and a recorded resumption
/// replayed finds no ticket. A chain is bounded in age and length (`ResumptionPolicy`); past
/// either, the peers run the full handshake again, whose fresh Diffie-Hellman keys also lock out
/// anyone who stole a ticket.
struct ResumptionTicket: Sendable {
    static let idSize = 12

    /// Sent in the clear by the initiator; unguessable, and never sent twice.
    let id: [UInt8]
    let secret: [UInt8]
    let peer: AuthenticatedPeer
    /// When the full handshake that began this chain completed.
    let chainStarted: Date
    /// How many links the chain has resumed before this ticket.
    let resumptions: Int

    /// The first ticket of a chain, from a full handshake's chaining key (`keyMaterial`, which
    /// both ends hold once the handshake has ended and which no recording of it reveals).
    init(keyMaterial: [UInt8], peer: AuthenticatedPeer, at date: Date) {
        let derived = Self.expand(SymmetricKey(data: keyMaterial), label: "arcus resumption ticket", count: 2)
        self.init(secret: derived[0], idSource: derived[1], peer: peer, chainStarted: date, resumptions: 0)
    }

    private init(secret: [UInt8], idSource: [UInt8], peer: AuthenticatedPeer, chainStarted: Date, resumptions: Int) {
        self.id = Array(idSource.prefix(Self.idSize))
        self.secret = secret
        self.peer = peer
        self.chainStarted = chainStarted
        self.resumptions = resumptions
    }

    /// A resumed link's keys (the initiator's sending key, then the responder's) and the ticket
    /// that replaces this one.
    func resume() -> (initiatorToResponder: FrameCipher, responderToInitiator: FrameCipher, next: ResumptionTicket) {
        let derived = Self.expand(SymmetricKey(data: secret), label: "arcus resumed link", count: 4, salt: id)
        let next = ResumptionTicket(
            secret: derived[2], idSource: derived[3], peer: peer, chainStarted: chainStarted, resumptions: resumptions + 1
        )
        return (FrameCipher(key: SymmetricKey(data: derived[0])), FrameCipher(key: SymmetricKey(data: derived[1])), next)
    }

    /// `count` 32-byte outputs of HKDF-SHA256 with `label` as info.
    private static func expand(_ key: SymmetricKey, label: String, count: Int, salt: [UInt8] = []) -> [[UInt8]] {
        let output = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: key, salt: salt, info: Array(label.utf8), outputByteCount: 32 * count
        ).withUnsafeBytes { Array($0) }
        return (0..<count).map { Array(output[32 * $0..<32 * ($0 + 1)]) }
    }
}

/// How long a ticket chain may go on before the peers must run the full handshake again.
public struct ResumptionPolicy: Sendable, Hashable {
    /// The longest time since the chain's full handshake.
    public var maximumAge: TimeInterval
    /// The most links one chain resumes.
    public var maximumResumptions: Int
    /// The most peers whose tickets are kept; the oldest go first.
    public var maximumPeers: Int

    public init(maximumAge: TimeInterval = 3600, maximumResumptions: Int = 1000, maximumPeers: Int = 1024) {
        self.maximumAge = maximumAge
        self.maximumResumptions = maximumResumptions
        self.maximumPeers = maximumPeers
    }

    /// No resumption: every link runs the full handshake.
    public static let never = ResumptionPolicy(maximumAge: 0, maximumResumptions: 0, maximumPeers: 0)

    func allows(_ ticket: ResumptionTicket, at date: Date) -> Bool {
        guard ticket.resumptions < maximumResumptions, date.timeIntervalSince(ticket.chainStarted) < maximumAge else { return false }
        if let expiry = ticket.peer.certificate?.expiresAt, expiry <= date { return false }
        return true
    }
}
