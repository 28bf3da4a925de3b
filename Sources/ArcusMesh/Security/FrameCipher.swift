import Crypto

/// One direction's ChaCha20-Poly1305 key and the counter that is its nonce, as Noise defines a
/// cipher state: the nonce is 4 zero bytes then the counter, 8 bytes little-endian. The counter
/// is implicit (never sent): links are ordered, so both ends count alike, and any frame that was
/// altered, repeated, reordered or sealed in another session fails to open.
///
/// `SymmetricKey` is an immutable value that swift-crypto does not declare `Sendable`; nothing
/// here mutates it, so sharing a cipher state across tasks is safe.
struct FrameCipher: @unchecked Sendable {
    /// Bytes sealing adds to a message: the Poly1305 tag.
    static let overhead = 16

    private let key: SymmetricKey
    /// The counter of the next frame; a counter is never used twice with a key.
    private(set) var counter: UInt64 = 0

    init(key: SymmetricKey) {
        self.key = key
    }

    /// Seals `plaintext` under the current counter, without advancing it: the caller advances
    /// once the frame is sure to be on its way, so a frame that was never sent leaves no gap.
    /// Nil once the counter is spent (2^64 - 1 frames, never in practice): the session must end.
    func seal(_ plaintext: [UInt8], authenticating associatedData: [UInt8] = []) -> [UInt8]? {
        guard counter < .max, let box = try? ChaChaPoly.seal(plaintext, using: key, nonce: Self.nonce(counter), authenticating: associatedData) else {
            return nil
        }
        return Array(box.ciphertext) + Array(box.tag)
    }

    mutating func advance() {
        counter += 1
    }

    /// Opens the frame sealed under the current counter and advances it; nil if the frame does
    /// not authenticate (or is shorter than a tag), and then the counter stays.
    mutating func open(_ frame: [UInt8], authenticating associatedData: [UInt8] = []) -> [UInt8]? {
        guard counter < .max, frame.count >= Self.overhead else { return nil }
        let tagStart = frame.count - Self.overhead
        guard let box = try? ChaChaPoly.SealedBox(nonce: Self.nonce(counter), ciphertext: frame[..<tagStart], tag: frame[tagStart...]),
              let plaintext = try? ChaChaPoly.open(box, using: key, authenticating: associatedData)
        else { return nil }
        counter += 1
        return Array(plaintext)
    }

    private static func nonce(_ counter: UInt64) -> ChaChaPoly.Nonce {
        var bytes = [UInt8](repeating: 0, count: 12)
        for index in 0..<8 { bytes[4 + index] = UInt8(truncatingIfNeeded: counter >> (8 * UInt64(index))) }
        // 12 bytes is ChaChaPoly's nonce size, so this cannot fail.
        return try! ChaChaPoly.Nonce(data: bytes)
    }
}
