import ArcusCodec
import Crypto
import Foundation

/// Which end of a link a peer is in the handshake: the one that opened it initiates.
public enum HandshakeRole: Sendable {
    case initiator, responder
}

/// Turns a fresh link into a `SecureLink`: both peers prove they belong to the mesh, learn each
/// other's identity and permissions, and agree on keys that no recording of the link can recover
/// later (forward secrecy: the keys come from ephemeral X25519 keys that are then forgotten).
///
/// The pattern is Noise XX (Noise_XX_25519_ChaChaPoly_SHA256; with a shared secret,
/// Noise_XXpsk0, the secret mixed in before the first message), followed by one confirmation:
/// ```
/// → version, mode, e                     [psk: tag proving the secret]
/// ← e, ee, s, es, {proof}
/// → s, se, {proof}
/// ← first session frame (empty), sealed: the responder accepted the initiator
/// ```
/// A proof is the peer's certificate, or with a shared secret its signing public key. Static keys
/// and proofs travel encrypted, so a listener learns no identity. The confirmation lets both
/// callers know the outcome: neither gets a `SecureLink` unless both accepted.
///
/// After a full handshake both peers keep a `ResumptionTicket`, and a later link between them
/// (dialled with `secure(_:as:peer:)` naming the peer) resumes with it in 31 bytes and the two hints
/// instead of some 290:
/// ```
/// → version, mode | resume, ticket id, hint   (the id: 12 bytes, never sent twice)
/// ← first session frame, sealed with a key only the ticket's holders can derive: the
///   responder's hint, authenticating the initiator's
/// ```
/// A hint is up to 32 bytes the layer above tells its peer on a resumed link (the sync layer
/// says which of the peer's hellos it still holds, so the peer need not send it again); it is
/// `SecureLink.resumption` at both ends.
/// The link's keys and the next ticket come from the ticket by HKDF, and both ends forget it.
/// A responder that lacks the ticket (restarted, expired, already used) answers one zero byte,
/// and the full handshake follows on the same link.
///
/// Handshake messages are cut into fragments that fit the link's MTU with `MessageChannel`'s
/// format (a certificate can outgrow a 244-byte BLE packet); session frames are not fragmented.
///
/// The whole exchange must end within `timeout`; otherwise the link is closed and `secure`
/// throws `HandshakeError.timedOut`, so a silent or stalled peer never wedges the caller. On any
/// failure the link is closed.
public struct MeshHandshake: Sendable {
    public static let version: UInt8 = 1
    /// Set in the mode byte of a first message that resumes with a ticket.
    static let resumeFlag: UInt8 = 0x80
    /// The responder's answer to a ticket it does not hold: go on with the full handshake.
    static let ticketRefused: [UInt8] = [0]
    /// The longest resumption hint.
    public static let maximumHintSize = 32
    public static let defaultTimeout: Duration = .seconds(10)
    /// The largest handshake message accepted: a proof with the largest certificate, and room.
    static let maximumMessageSize = 32 << 10

    public let identity: PeerIdentity
    public let credential: MeshCredential
    public var timeout: Duration
    /// The tickets this peer holds, shared by every copy of this handshake.
    public let tickets: ResumptionTickets
    /// The time that certificates' expiry is checked against.
    public var now: @Sendable () -> Date
    /// The peers the mesh authority revoked: refused, with their certificates and their tickets.
    public var revocations: MeshRevocations?

    public init(
        identity: PeerIdentity, credential: MeshCredential, timeout: Duration = Self.defaultTimeout,
        tickets: ResumptionTickets = ResumptionTickets(), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.identity = identity
        self.credential = credential
        self.timeout = timeout
        self.tickets = tickets
        self.now = now
    }

    /// The smallest link MTU a secure session works over: a tag and one byte.
    public static let minimumMTU = max(FrameCipher.overhead + 1, MessageFragments.minimumMTU(forMessagesUpTo: maximumMessageSize))

    /// Runs the handshake on `link`, which neither side may have used yet, and returns the secure
    /// link that replaces it. An initiator that names the `peer` it dialled resumes with its
    /// ticket for that peer when it holds one. `timeout`, when given, replaces `self.timeout` for
    /// this link (an accepted link gets what its `PendingHandshake` has left). Throws
    /// `HandshakeError` (or `CancellationError` if the task is cancelled) after closing the link.
    public func secure(
        _ link: any Link, as role: HandshakeRole, peer: PeerID? = nil, timeout: Duration? = nil,
        hint: @escaping @Sendable (PeerID) -> [UInt8] = { _ in [] }
    ) async throws -> SecureLink {
        guard link.mtu >= Self.minimumMTU else {
            link.close()
            throw HandshakeError.linkTooSmall(mtu: link.mtu, needed: Self.minimumMTU)
        }
        if case .certificate(let certificate, _) = credential, certificate.publicKey != identity.publicKey {
            link.close()
            throw HandshakeError.certificateNotForThisIdentity
        }
        let timeout = timeout ?? self.timeout
        do {
            return try await withThrowingTaskGroup(of: SecureLink?.self) { group in
                group.addTask {
                    var exchange = HandshakeExchange(handshake: self, link: link, hint: hint)
                    switch role {
                    case .initiator:
                        if let peer, let ticket = tickets.take(for: peer, at: now()), revocations?.revokes(peer) != true,
                           let resumed = try await exchange.resume(with: ticket) {
                            return resumed
                        }
                        return try await exchange.initiate()
                    case .responder: return try await exchange.respond()
                    }
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let secured = first else {
                    // Closing first ends whatever the exchange awaits on the link.
                    link.close()
                    throw HandshakeError.timedOut(after: timeout, link: link.description)
                }
                return secured
            }
        } catch {
            link.close()
            throw error
        }
    }
}

/// One run of the handshake on one link: the steps of both roles around the Noise handshake
/// state, which does the Noise part (`NoiseHandshakeState`, shared with the test-vector runner).
private struct HandshakeExchange {
    let handshake: MeshHandshake
    let link: any Link
    let inbound: InboundFrames
    /// What this side tells a peer it resumes with, cut to `maximumHintSize`.
    let hint: @Sendable (PeerID) -> [UInt8]

    init(handshake: MeshHandshake, link: any Link, hint: @escaping @Sendable (PeerID) -> [UInt8]) {
        self.handshake = handshake
        self.link = link
        self.hint = { Array(hint($0).prefix(MeshHandshake.maximumHintSize)) }
        inbound = InboundFrames(link: link)
    }

    private var header: [UInt8] { header(resuming: false) }

    private func header(resuming: Bool) -> [UInt8] {
        [MeshHandshake.version, handshake.credential.mode.rawValue | (resuming ? MeshHandshake.resumeFlag : 0)]
    }

    private var isSharedSecret: Bool { handshake.credential.mode == .sharedSecret }

    mutating func initiate() async throws -> SecureLink {
        // → version, mode, e [psk tag]
        var state = noiseState(as: .initiator)
        try await send(header + (try write(&state, payload: [])), step: "sending the first message")

        // ← e, ee, s, es, {proof}
        let proof = try read(&state, try await receive(step: "waiting for the responder's keys"), proof: "the responder's proof")
        let peer = try authenticate(proof: proof, remoteStatic: try remoteStatic(of: state))

        // → s, se, {proof}
        try await send(try write(&state, payload: self.proof), step: "sending this peer's proof")

        // ← the confirmation, the responder's first session frame
        let (sending, receiving) = state.split()
        guard let confirmation = await inbound.nextFrame() else {
            throw HandshakeError.linkClosed(link: link.description, step: "waiting for the responder to accept this peer's proof")
        }
        var confirmed = receiving
        guard confirmed.open(confirmation) == [] else {
            throw HandshakeError.malformedMessage("the responder's confirmation did not authenticate")
        }
        await inbound.startSession(receivingWith: confirmed)
        keepTicket(for: peer, after: state)
        return SecureLink(link: link, peer: peer, inbound: inbound, sending: sending)
    }

    /// Resumes with `ticket`; nil when the responder does not hold it, and the full handshake
    /// is then to follow on the same link.
    mutating func resume(with ticket: ResumptionTicket) async throws -> SecureLink? {
        let ours = hint(ticket.peer.peerID)
        try await send(header(resuming: true) + ticket.id + ours, step: "resuming the session")
        let (sending, receiving, next) = ticket.resume()
        guard let answer = await inbound.nextFrame() else {
            throw HandshakeError.linkClosed(link: link.description, step: "waiting for the responder to resume")
        }
        if answer == MeshHandshake.ticketRefused { return nil }
        var confirmed = receiving
        guard let theirs = confirmed.open(answer, authenticating: ours), theirs.count <= MeshHandshake.maximumHintSize else {
            throw HandshakeError.malformedMessage("the responder's confirmation of the resumed session did not authenticate")
        }
        await inbound.startSession(receivingWith: confirmed)
        handshake.tickets.store(next)
        return SecureLink(link: link, peer: ticket.peer, inbound: inbound, sending: sending, resumption: ResumptionHints(sent: ours, received: theirs))
    }

    mutating func respond() async throws -> SecureLink {
        // → version, mode, e [psk tag]   or   → version, mode | resume, ticket id
        var reader = ByteReader(try await receive(step: "waiting for the initiator's first message"))
        var resuming = try readHeader(&reader)
        if resuming {
            guard reader.remaining >= ResumptionTicket.idSize, reader.remaining <= ResumptionTicket.idSize + MeshHandshake.maximumHintSize else {
                throw HandshakeError.malformedMessage("a resumption is not a 12-byte ticket id and a hint of at most \(MeshHandshake.maximumHintSize) bytes")
            }
            let ticketID = Array(try reader.readBytes(ResumptionTicket.idSize))
            if let resumed = try await resume(ticketID: ticketID, hint: rest(of: reader)) { return resumed }
            reader = ByteReader(try await receive(step: "waiting for the initiator's full handshake"))
            resuming = try readHeader(&reader)
            guard !resuming else { throw HandshakeError.malformedMessage("a second resumption on one link") }
        }
        var state = noiseState(as: .responder)
        guard try read(&state, rest(of: reader), proof: "the initiator's first message").isEmpty else {
            throw HandshakeError.malformedMessage("the first message carries an unexpected payload")
        }

        // ← e, ee, s, es, {proof}
        try await send(try write(&state, payload: proof), step: "sending this peer's keys")

        // → s, se, {proof}
        let theirProof = try read(&state, try await receive(step: "waiting for the initiator's proof"), proof: "the initiator's proof")
        let peer = try authenticate(proof: theirProof, remoteStatic: try remoteStatic(of: state))

        // ← the confirmation
        let (sending, receiving) = state.split()
        guard let confirmation = sending.seal([]) else { throw HandshakeError.malformedMessage("the session keys are spent") }
        var confirmed = sending
        confirmed.advance()
        try await send(frame: confirmation, step: "confirming the session")
        await inbound.startSession(receivingWith: receiving)
        keepTicket(for: peer, after: state)
        return SecureLink(link: link, peer: peer, inbound: inbound, sending: confirmed)
    }

    /// Accepts the ticket named `ticketID` if this side holds it; otherwise refuses it (nil),
    /// and the initiator goes on with the full handshake.
    private mutating func resume(ticketID: [UInt8], hint theirs: [UInt8]) async throws -> SecureLink? {
        guard let ticket = handshake.tickets.take(id: ticketID, at: handshake.now()),
              handshake.revocations?.revokes(ticket.peer.peerID) != true else {
            try await send(frame: MeshHandshake.ticketRefused, step: "refusing a ticket")
            return nil
        }
        let (receiving, sending, next) = ticket.resume()
        let ours = hint(ticket.peer.peerID)
        guard let confirmation = sending.seal(ours, authenticating: theirs) else {
            throw HandshakeError.malformedMessage("the session keys are spent")
        }
        var confirmed = sending
        confirmed.advance()
        try await send(frame: confirmation, step: "confirming the resumed session")
        await inbound.startSession(receivingWith: receiving)
        handshake.tickets.store(next)
        return SecureLink(link: link, peer: ticket.peer, inbound: inbound, sending: confirmed, resumption: ResumptionHints(sent: ours, received: theirs))
    }

    /// Starts a ticket chain with `peer` once a full handshake has succeeded.
    private func keepTicket(for peer: AuthenticatedPeer, after state: NoiseHandshakeState) {
        handshake.tickets.store(ResumptionTicket(keyMaterial: state.resumptionKeyMaterial(), peer: peer, at: handshake.now()))
    }

    /// Reads the version and mode bytes; true when the mode asks to resume.
    private func readHeader(_ reader: inout ByteReader) throws -> Bool {
        let version = try readByte(&reader), modeByte = try readByte(&reader)
        guard version == MeshHandshake.version else { throw HandshakeError.unsupportedVersion(version) }
        let mode = modeByte & ~MeshHandshake.resumeFlag
        guard mode == handshake.credential.mode.rawValue else {
            guard let remote = HandshakeMode(rawValue: mode) else { throw HandshakeError.malformedMessage("unknown mode \(mode)") }
            throw HandshakeError.modeMismatch(local: handshake.credential.mode, remote: remote)
        }
        return modeByte & MeshHandshake.resumeFlag != 0
    }

    private func readByte(_ reader: inout ByteReader) throws -> UInt8 {
        guard let byte = try? reader.readByte() else { throw HandshakeError.malformedMessage("the first message is cut short") }
        return byte
    }

    private func rest(of reader: ByteReader) -> [UInt8] {
        Array(reader.bytes[reader.offset..<reader.end])
    }

    // MARK: Noise

    /// A fresh Noise state with a fresh ephemeral key. The prologue, which both sides hash, holds
    /// the version and mode, so a downgrade is caught; with a shared secret the pattern is XXpsk0,
    /// the secret mixed in before the first message.
    private func noiseState(as role: HandshakeRole) -> NoiseHandshakeState {
        let presharedKeys: [[UInt8]]
        if case .sharedSecret(let secret) = handshake.credential { presharedKeys = [secret.presharedKey] } else { presharedKeys = [] }
        return NoiseHandshakeState(
            pattern: isSharedSecret ? .xxPSK0 : .xx, role: role, prologue: Array("arcus mesh handshake".utf8) + header,
            localStatic: handshake.identity.agreementKey, presharedKeys: presharedKeys
        )
    }

    private func write(_ state: inout NoiseHandshakeState, payload: [UInt8]) throws -> [UInt8] {
        do {
            return try state.writeMessage(payload: payload)
        } catch {
            throw HandshakeError.malformedMessage(error.description)
        }
    }

    /// The payload of the peer's `message`, which `proof` names in errors.
    private func read(_ state: inout NoiseHandshakeState, _ message: [UInt8], proof: String) throws -> [UInt8] {
        do {
            return try state.readMessage(message)
        } catch .notAuthentic(let part) {
            // With a shared secret every key depends on it: failing to decrypt means the peer lacks it.
            if isSharedSecret { throw HandshakeError.membershipNotProven(link: link.description) }
            throw HandshakeError.malformedMessage("\(part.kind == .payload ? proof : part.description) did not authenticate")
        } catch .cutShort(let part) {
            throw HandshakeError.malformedMessage("\(part.kind == .payload ? proof : part.description) is cut short")
        } catch {
            throw HandshakeError.malformedMessage(error.description)
        }
    }

    /// The peer's static key, which the state has read once the peer's `s` token has come.
    private func remoteStatic(of state: NoiseHandshakeState) throws -> Curve25519.KeyAgreement.PublicKey {
        guard let key = state.remoteStatic else { throw HandshakeError.malformedMessage("the peer's static key is missing") }
        return key
    }

    // MARK: Proofs

    /// What this side shows the other: its certificate, or with a shared secret its signing key.
    private var proof: [UInt8] {
        switch handshake.credential {
        case .sharedSecret: return Array(handshake.identity.publicKey.signingKey.rawRepresentation)
        case .certificate(let certificate, _): return certificate.encoded
        }
    }

    /// The peer, if `proof` admits the holder of `remoteStatic` (whose possession the DH steps proved).
    private func authenticate(proof: [UInt8], remoteStatic: Curve25519.KeyAgreement.PublicKey) throws -> AuthenticatedPeer {
        switch handshake.credential {
        case .sharedSecret:
            guard let signingKey = try? Curve25519.Signing.PublicKey(rawRepresentation: proof) else {
                throw HandshakeError.malformedMessage("the peer's signing key is not 32 bytes of Ed25519")
            }
            // The peer id hashes the agreement key too, so a borrowed signing key names a new peer,
            // never the key's owner.
            let publicKey = PeerPublicKey(signingKey: signingKey, agreementKey: remoteStatic)
            return AuthenticatedPeer(publicKey: publicKey, name: nil, permissions: .full, certificate: nil)
        case .certificate(_, let authority):
            do {
                let certificate = try PeerCertificate(decoding: proof)
                try certificate.verify(authority: authority, now: handshake.now())
                guard certificate.publicKey.agreementKeyBytes.elementsEqual(remoteStatic.rawRepresentation) else {
                    throw CertificateError.notForThisPeer(peer: certificate.name)
                }
                if handshake.revocations?.revokes(certificate.peerID) == true { throw CertificateError.revoked(peer: certificate.name) }
                return AuthenticatedPeer(
                    publicKey: certificate.publicKey, name: certificate.name, permissions: certificate.permissions, certificate: certificate
                )
            } catch let error as CertificateError {
                throw HandshakeError.certificateRefused(error)
            }
        }
    }

    // MARK: Messages

    private func send(_ message: [UInt8], step: String) async throws {
        for fragment in MessageFragments(message, mtu: link.mtu) { try await send(frame: fragment, step: step) }
    }

    private func send(frame: [UInt8], step: String) async throws {
        do {
            try await link.send(frame)
        } catch LinkError.closed {
            throw HandshakeError.linkClosed(link: link.description, step: step)
        }
    }

    /// The next whole handshake message, rebuilt from its fragments.
    private func receive(step: String) async throws -> [UInt8] {
        var reassembler = FragmentReassembler(maximumMessageSize: MeshHandshake.maximumMessageSize)
        while let fragment = await inbound.nextFrame() {
            do {
                if let message = try reassembler.accept(fragment) { return message }
            } catch {
                throw HandshakeError.malformedMessage("\(error) (\(step))")
            }
        }
        try Task.checkCancellation()
        throw HandshakeError.linkClosed(link: link.description, step: step)
    }
}
