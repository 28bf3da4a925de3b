import Crypto

/// One side of a Noise handshake (the Noise Protocol Framework, revision 34, §5.3) over X25519,
/// ChaCha20-Poly1305 and SHA-256, for `NoiseHandshakePattern`'s patterns: it writes and reads
/// the handshake messages with their payloads, gives the handshake hash, and splits into the two
/// transport ciphers. `MeshHandshake` runs every full handshake through it, and
/// `NoiseVectorFile` runs the published test vectors through the same code.
///
/// Contract: the two sides call `writeMessage` and `readMessage` in the pattern's order (the
/// initiator writes the even-numbered messages); calling out of turn is a programming error and
/// traps. A read that throws leaves the state unusable: the handshake is over.
struct NoiseHandshakeState {
    let pattern: NoiseHandshakePattern
    let role: HandshakeRole
    private var symmetric: NoiseSymmetricState
    private let localStatic: Curve25519.KeyAgreement.PrivateKey
    private let localEphemeral: Curve25519.KeyAgreement.PrivateKey
    private(set) var remoteEphemeral: Curve25519.KeyAgreement.PublicKey?
    /// The peer's static key, once its `s` token has been read (the proof of possession comes
    /// with the Diffie-Hellman token after it, and is complete when the payload authenticates).
    private(set) var remoteStatic: Curve25519.KeyAgreement.PublicKey?
    /// The pre-shared keys not yet mixed in, in token order.
    private var presharedKeys: [[UInt8]]
    /// The number of the next handshake message, written or read.
    private var nextMessage = 0

    /// Starts a handshake of `pattern` as `role`: mixes the protocol name and `prologue` into the
    /// transcript. `presharedKeys` holds one 32-byte key per psk token, in order.
    ///
    /// `ephemeral` is for test vectors only, which fix the ephemeral keys to make the messages
    /// reproducible; the mesh never passes it, so every handshake it runs has a fresh key.
    init(
        pattern: NoiseHandshakePattern, role: HandshakeRole, prologue: [UInt8], localStatic: Curve25519.KeyAgreement.PrivateKey,
        presharedKeys: [[UInt8]] = [], ephemeral: Curve25519.KeyAgreement.PrivateKey = Curve25519.KeyAgreement.PrivateKey()
    ) {
        precondition(presharedKeys.count == pattern.presharedKeyCount && presharedKeys.allSatisfy { $0.count == 32 },
                     "\(pattern) takes \(pattern.presharedKeyCount) pre-shared keys of 32 bytes")
        self.pattern = pattern
        self.role = role
        self.localStatic = localStatic
        self.localEphemeral = ephemeral
        self.presharedKeys = presharedKeys
        symmetric = NoiseSymmetricState(protocolName: "Noise_\(pattern.name)_25519_ChaChaPoly_SHA256")
        symmetric.mixHash(prologue)
    }

    /// Whether every handshake message has been written or read: `split` may be called.
    var isComplete: Bool { nextMessage == pattern.messages.count }

    /// The transcript hash: after the last message, the handshake hash both sides share (§11.2).
    var handshakeHash: [UInt8] { symmetric.transcriptHash }

    /// Writes the next message, which must be this side's to write, carrying `payload`
    /// (encrypted once a key exists).
    mutating func writeMessage(payload: [UInt8]) throws(NoiseHandshakeError) -> [UInt8] {
        let tokens = beginMessage(writing: true)
        var message: [UInt8] = []
        for token in tokens {
            switch token {
            case .e:
                let key = Array(localEphemeral.publicKey.rawRepresentation)
                message += key
                mixEphemeral(key)
            case .s:
                message += try encrypt(Array(localStatic.publicKey.rawRepresentation))
            case .psk:
                mixPresharedKey()
            case .ee, .es, .se:
                try mixAgreement(token)
            }
        }
        return message + (try encrypt(payload))
    }

    /// Reads the next message, which must be the peer's to write, and returns its payload.
    mutating func readMessage(_ message: [UInt8]) throws(NoiseHandshakeError) -> [UInt8] {
        let tokens = beginMessage(writing: false)
        let sender: HandshakeRole = role == .initiator ? .responder : .initiator
        var rest = message[...]
        for token in tokens {
            switch token {
            case .e:
                let part = NoiseHandshakeError.Part(kind: .ephemeralKey, sender: sender)
                let bytes = try take(32, from: &rest, part)
                // X25519 takes any 32 bytes as a public key.
                guard let key = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: bytes) else { throw .cutShort(part) }
                remoteEphemeral = key
                mixEphemeral(bytes)
            case .s:
                let part = NoiseHandshakeError.Part(kind: .staticKey, sender: sender)
                let bytes = try decrypt(try take(symmetric.encryptedSize(of: 32), from: &rest, part), part)
                guard let key = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: bytes) else { throw .cutShort(part) }
                remoteStatic = key
            case .psk:
                mixPresharedKey()
            case .ee, .es, .se:
                try mixAgreement(token)
            }
        }
        return try decrypt(Array(rest), NoiseHandshakeError.Part(kind: .payload, sender: sender))
    }

    /// The two transport ciphers (§5.2 `Split`), this side's sending one first. Only once the
    /// handshake is complete.
    func split() -> (sending: FrameCipher, receiving: FrameCipher) {
        precondition(isComplete, "split before the handshake is complete")
        let (initiatorToResponder, responderToInitiator) = symmetric.split()
        return role == .initiator ? (initiatorToResponder, responderToInitiator) : (responderToInitiator, initiatorToResponder)
    }

    /// Key material for a resumption ticket, independent of the transport keys; only once the
    /// handshake is complete.
    func resumptionKeyMaterial() -> [UInt8] {
        precondition(isComplete, "resumption key material before the handshake is complete")
        return symmetric.resumptionKeyMaterial()
    }

    // MARK: Tokens

    private mutating func beginMessage(writing: Bool) -> [NoiseHandshakePattern.Token] {
        precondition(!isComplete, "the \(pattern) handshake has no message \(nextMessage + 1)")
        let initiatorWrites = nextMessage % 2 == 0
        precondition(writing == (initiatorWrites == (role == .initiator)), "message \(nextMessage + 1) of \(pattern) is out of turn")
        defer { nextMessage += 1 }
        return pattern.messages[nextMessage]
    }

    /// The `e` token: with pre-shared keys, the ephemeral key also feeds the chaining key (§9.2).
    private mutating func mixEphemeral(_ key: [UInt8]) {
        symmetric.mixHash(key)
        if pattern.usesPresharedKeys { symmetric.mixKey(key) }
    }

    private mutating func mixPresharedKey() {
        symmetric.mixKeyAndHash(presharedKeys.removeFirst())
    }

    /// `ee`, `es` or `se`: the first letter is the initiator's key, the second the responder's.
    private mutating func mixAgreement(_ token: NoiseHandshakePattern.Token) throws(NoiseHandshakeError) {
        let initiatorsIsEphemeral: Bool, respondersIsEphemeral: Bool
        switch token {
        case .ee: (initiatorsIsEphemeral, respondersIsEphemeral) = (true, true)
        case .es: (initiatorsIsEphemeral, respondersIsEphemeral) = (true, false)
        case .se: (initiatorsIsEphemeral, respondersIsEphemeral) = (false, true)
        case .e, .s, .psk: preconditionFailure("\(token) is not a Diffie-Hellman token")
        }
        let (localIsEphemeral, remoteIsEphemeral) = role == .initiator
            ? (initiatorsIsEphemeral, respondersIsEphemeral) : (respondersIsEphemeral, initiatorsIsEphemeral)
        let local = localIsEphemeral ? localEphemeral : localStatic
        guard let remote = remoteIsEphemeral ? remoteEphemeral : remoteStatic else {
            preconditionFailure("\(pattern) uses a remote key before it has been read")
        }
        do {
            symmetric.mixKey(try local.sharedSecretFromKeyAgreement(with: remote).withUnsafeBytes { Array($0) })
        } catch {
            // A low-order point gives an all-zero secret, which swift-crypto refuses.
            throw .noSharedSecret
        }
    }

    // MARK: Bytes

    private mutating func encrypt(_ plaintext: [UInt8]) throws(NoiseHandshakeError) -> [UInt8] {
        guard let ciphertext = symmetric.encryptAndHash(plaintext) else { throw .keysSpent }
        return ciphertext
    }

    private mutating func decrypt(_ ciphertext: [UInt8], _ part: NoiseHandshakeError.Part) throws(NoiseHandshakeError) -> [UInt8] {
        guard let plaintext = symmetric.decryptAndHash(ciphertext) else { throw .notAuthentic(part) }
        return plaintext
    }

    private func take(_ count: Int, from rest: inout ArraySlice<UInt8>, _ part: NoiseHandshakeError.Part) throws(NoiseHandshakeError) -> [UInt8] {
        guard rest.count >= count else { throw .cutShort(part) }
        defer { rest = rest.dropFirst(count) }
        return Array(rest.prefix(count))
    }
}
