import ArcusMesh
import ArcusTestSupport
import Crypto
import Foundation
import Testing

/// Shared secrets that could be guessed are refused, and the mesh identifier every peer
/// advertises (mDNS TXT, BLE adverts, NATS subjects) is derived so that it cannot be tested
/// against anything but a guess of a strong secret (issue 17, finding 11).
@Suite("Mesh secrets and the advertised mesh identifier")
struct MeshSecretTests {
    static func refusal(_ bytes: [UInt8]) -> MeshSecretError? {
        do {
            _ = try MeshSecret(bytes: bytes)
            return nil
        } catch {
            return error
        }
    }

    @Test("a 16-byte ASCII secret, short passphrases and a 40-character English passphrase are refused, saying to run `arcus mesh secret`",
          arguments: ["Sixteen-byte-key", "correct horse battery staple", "hunter2hunter2hunter2hunter2hunter2",
                      "the cat sat on the mat with a big red hat", "Our mesh secret is the name of our first dog, Rex!!"])
    func weakPassphrasesRefused(passphrase: String) throws {
        let error = try #require(Self.refusal(Array(passphrase.utf8)), "\(passphrase) was accepted")
        guard case .tooWeak(_, let strength) = error else { Issue.record("\(error)"); return }
        #expect(strength.bits < MeshSecret.minimumStrength)
        #expect(error.description.contains("too easy to guess") && error.description.contains("`arcus mesh secret FILE`"), "\(error)")
    }

    @Test("secrets long enough but patterned are refused: zeros, one byte repeated, a hex pattern repeated, few distinct bytes")
    func patternedSecretsRefused() throws {
        let patterned: [[UInt8]] = [
            [UInt8](repeating: 0, count: 32),
            [UInt8](repeating: 0x41, count: 1024),
            Array(String(repeating: "0123456789abcdef", count: 4).utf8),
            Array((String(repeating: "0", count: 63) + "1").utf8),
            (0..<64).map { UInt8($0 % 4) },
            Array("correct-horse-battery-staple-correct-horse-battery-staple".utf8),
        ]
        for bytes in patterned {
            #expect(Self.refusal(bytes) != nil, "\(Hex.encode(bytes.prefix(16)))… (\(bytes.count) bytes) was accepted")
        }
    }

    @Test("random bytes, 64 random hex digits, and ten random words of a diceware list are accepted")
    func strongSecretsAccepted() throws {
        for seed in SeededRandom.seeds(count: 1, test: "random secrets") {
            print("random secrets: seed \(seed) (replay with ARCUS_TEST_SEED=\(seed))")
            var random = SeededRandom(seed: seed)
            for _ in 0..<500 {
                let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
                #expect(Self.refusal(bytes) == nil, "\(Hex.encode(bytes)), seed \(seed)")
                let hex = Array((Hex.encode(bytes) + "\n").utf8)
                let strength = SecretStrength(of: hex)
                #expect(strength.kind == .hexDigits && strength.bits >= 200, "\(strength), seed \(seed)")
            }
        }
        let words = "orbit lantern velvet cactus shimmer quarry tundra mosaic pebble falcon"
        let strength = SecretStrength(of: Array(words.utf8))
        #expect(strength.kind == .passphrase(words: 10) && strength.bits == 129, "\(strength)")
        #expect(Self.refusal(Array(words.utf8)) == nil)
        #expect(MeshSecret.random().bytes.count == 32)
    }

    @Test("text that is not hex, such as base64 or a random password, is judged as a passphrase by its words")
    func textIsAPassphrase() {
        let base64 = Array(Data((0..<32).map { UInt8($0 * 7 + 3) }).base64EncodedString().utf8)
        guard case .passphrase = SecretStrength(of: base64).kind else { Issue.record("base64 was not read as a passphrase"); return }
        #expect(Self.refusal(base64) != nil)
        #expect(SecretStrength(of: Array("Grüße aus München, für euch alle".utf8)).kind == .passphrase(words: 6))
        #expect(SecretStrength(of: Array("ab cd ab".utf8)).bits == 18, "words shorter than three letters count 4.7 bits a letter, each once")
    }

    @Test("the advertised identifier is HKDF-SHA256 of the secret under its own label, not the old double SHA-256 of the pre-shared key")
    func identifierIsNotTheOldHash() throws {
        let bytes = (0..<32).map { UInt8(truncatingIfNeeded: $0 * 13 + 5) }
        let credential = MeshCredential.sharedSecret(try MeshSecret(bytes: bytes))

        // The construction every advert had before: SHA-256 over the label and the handshake's
        // pre-shared key, itself SHA-256 of the secret, cut to 64 bits.
        let presharedKey = Array(SHA256.hash(data: Array("arcus mesh secret".utf8) + [0] + bytes))
        let old = Hex.encode(SHA256.hash(data: Array("arcus mesh hash".utf8) + [0] + presharedKey).prefix(8))
        #expect(credential.meshHash != old)

        let expected = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: bytes), salt: Array("arcus mesh identifier".utf8), info: [UInt8](), outputByteCount: 8
        ).withUnsafeBytes { Hex.encode($0) }
        #expect(credential.meshHash == expected)
        #expect(credential.meshHash.count == 16 && !Hex.encode(presharedKey).contains(credential.meshHash))
        #expect(MeshCredential.sharedSecret(MeshSecret.random().secret).meshHash != credential.meshHash)
    }

    @Test("a certified mesh's identifier is HKDF of the authority's public key under the same label")
    func certifiedIdentifier() throws {
        let authority = MeshAuthority()
        let identity = PeerIdentity()
        let certificate = try authority.issue(to: identity.publicKey, name: "p", permissions: .full, expiresAt: nil)
        let credential = MeshCredential.certificate(certificate, authority: authority.publicKey)
        let expected = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: authority.publicKey.bytes), salt: Array("arcus mesh identifier".utf8), info: [UInt8](),
            outputByteCount: 8
        ).withUnsafeBytes { Hex.encode($0) }
        #expect(credential.meshHash == expected)
    }
}
