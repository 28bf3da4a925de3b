import Crypto

/// The running state of a Noise handshake (the Noise Protocol Framework, revision 34, §5.2):
/// the chaining key that every Diffie-Hellman result is mixed into with HKDF-SHA256, the
/// transcript hash that every message is mixed into, and the cipher that encrypts handshake
/// payloads once a key exists, with the transcript as associated data. Both sides hold one and
/// apply the same operations in the same order; any difference makes decryption fail.
struct NoiseSymmetricState {
    private var chainingKey: [UInt8]
    private(set) var transcriptHash: [UInt8]
    private var cipher: FrameCipher?

    init(protocolName: String) {
        let name = Array(protocolName.utf8)
        transcriptHash = name.count <= 32 ? name + [UInt8](repeating: 0, count: 32 - name.count) : Array(SHA256.hash(data: name))
        chainingKey = transcriptHash
    }

    mutating func mixHash(_ data: [UInt8]) {
        transcriptHash = Array(SHA256.hash(data: transcriptHash + data))
    }

    /// Mixes key material (a DH result, or an ephemeral key in PSK mode) into the chaining key
    /// and starts a new cipher key from it.
    mutating func mixKey(_ inputKeyMaterial: [UInt8]) {
        let output = hkdf(inputKeyMaterial, outputs: 2)
        chainingKey = output[0]
        cipher = FrameCipher(key: SymmetricKey(data: output[1]))
    }

    /// Mixes a pre-shared key into both the chaining key and the transcript.
    mutating func mixKeyAndHash(_ inputKeyMaterial: [UInt8]) {
        let output = hkdf(inputKeyMaterial, outputs: 3)
        chainingKey = output[0]
        mixHash(output[1])
        cipher = FrameCipher(key: SymmetricKey(data: output[2]))
    }

    /// Encrypts `plaintext` if a key exists (else sends it as is) and mixes what is sent into the transcript.
    mutating func encryptAndHash(_ plaintext: [UInt8]) -> [UInt8]? {
        guard var cipher else {
            mixHash(plaintext)
            return plaintext
        }
        guard let ciphertext = cipher.seal(plaintext, authenticating: transcriptHash) else { return nil }
        cipher.advance()
        self.cipher = cipher
        mixHash(ciphertext)
        return ciphertext
    }

    /// The inverse of `encryptAndHash`; nil if the ciphertext does not authenticate.
    mutating func decryptAndHash(_ ciphertext: [UInt8]) -> [UInt8]? {
        guard var cipher else {
            mixHash(ciphertext)
            return ciphertext
        }
        guard let plaintext = cipher.open(ciphertext, authenticating: transcriptHash) else { return nil }
        self.cipher = cipher
        mixHash(ciphertext)
        return plaintext
    }

    /// The bytes `encryptAndHash` adds to `count` bytes of plaintext at this point.
    func encryptedSize(of count: Int) -> Int { cipher == nil ? count : count + FrameCipher.overhead }

    /// The two transport keys: the initiator's sending key first, then the responder's.
    func split() -> (initiatorToResponder: FrameCipher, responderToInitiator: FrameCipher) {
        let output = hkdf([], outputs: 2)
        return (FrameCipher(key: SymmetricKey(data: output[0])), FrameCipher(key: SymmetricKey(data: output[1])))
    }

    /// Key material for a resumption ticket, independent of the transport keys (another HKDF
    /// input); only meaningful once the handshake is complete.
    func resumptionKeyMaterial() -> [UInt8] {
        hkdf(Array("arcus resumption".utf8), outputs: 1)[0]
    }

    /// Noise's HKDF: RFC 5869 with the chaining key as salt and no info, cut into 32-byte outputs.
    private func hkdf(_ inputKeyMaterial: [UInt8], outputs: Int) -> [[UInt8]] {
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: inputKeyMaterial), salt: chainingKey, info: [UInt8](), outputByteCount: 32 * outputs
        )
        let bytes = key.withUnsafeBytes { Array($0) }
        return (0..<outputs).map { Array(bytes[32 * $0..<32 * ($0 + 1)]) }
    }
}
