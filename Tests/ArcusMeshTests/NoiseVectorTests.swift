import ArcusMesh
import Foundation
import Testing

/// The mesh's handshake state and session frames against published Noise test vectors
/// (Fixtures/noise/README.md): every applicable vector must pass, and a vector altered anywhere
/// must fail, naming the vector and the message, so the runner is shown able to fail.
@Suite("Published Noise test vectors", .timeLimit(.minutes(1)))
struct NoiseVectorTests {
    static let xx = "Noise_XX_25519_ChaChaPoly_SHA256.json"
    static let psk = "Noise_XXpsk_25519_ChaChaPoly.json"

    static func fixture(_ name: String) throws -> [UInt8] {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/noise/\(name)", withExtension: nil))
        return Array(try Data(contentsOf: url))
    }

    /// The fixture `name` with `change` applied to its parsed JSON, written back.
    static func altered(_ name: String, _ change: (inout [[String: Any]]) -> Void) throws -> [UInt8] {
        var document = try #require(try JSONSerialization.jsonObject(with: Data(fixture(name))) as? [String: Any])
        var vectors = try #require(document["vectors"] as? [[String: Any]])
        change(&vectors)
        document["vectors"] = vectors
        return Array(try JSONSerialization.data(withJSONObject: document))
    }

    static func run(_ bytes: [UInt8]) async throws -> NoiseVectorReport {
        try await NoiseVectorFile(bytes: bytes).run()
    }

    @Test("every vector of the shared Noise_XX_25519_ChaChaPoly_SHA256 file passes: handshake and transport messages byte for byte, and the handshake hash")
    func sharedFilePasses() async throws {
        let file = try NoiseVectorFile(bytes: Self.fixture(Self.xx))
        #expect(file.runnable == 2 && file.skipped == 0)
        let report = await file.run()
        #expect(report.failures == [])
        #expect(report.passed == 2)
        #expect(report.lines.last == "2 passed, 0 failed")
    }

    @Test("snow's XXpsk0+psk1+psk2+psk3 vector (psk0 as a shared secret uses it) passes, and its BLAKE2s sibling is counted as skipped")
    func presharedKeyVectorPasses() async throws {
        let report = try await Self.run(Self.fixture(Self.psk))
        #expect(report.failures == [])
        #expect(report.passed == 1 && report.skipped == 1)
        #expect(report.lines.suffix(2).first?.hasPrefix("1 skipped") == true)
        #expect(report.lines.last == "1 passed, 0 failed")
    }

    @Test("one ciphertext byte flipped, in any handshake or transport message, fails that vector and names the message",
          arguments: [(0, 0), (0, 1), (0, 2), (0, 3), (0, 5), (1, 4)])
    func flippedByteFails(vector: Int, message: Int) async throws {
        let bytes = try Self.altered(Self.xx) { vectors in
            var messages = vectors[vector]["messages"] as! [[String: Any]]
            var ciphertext = Hex.decode(messages[message]["ciphertext"] as! String)!
            ciphertext[ciphertext.count / 2] ^= 0x01
            messages[message]["ciphertext"] = Hex.encode(ciphertext)
            vectors[vector]["messages"] = messages
        }
        let report = try await Self.run(bytes)
        #expect(report.passed == 1 && report.failed == 1)
        let failure = try #require(report.failures.first)
        #expect(failure.hasPrefix("vector \(vector + 1) (Noise_XX_25519_ChaChaPoly_SHA256"), "\(failure)")
        #expect(failure.contains("messages[\(message)] (\(message < 3 ? "handshake" : "transport")"), "\(failure)")
        #expect(failure.contains("differs"), "\(failure)")
        #expect(report.lines.last == "1 passed, 1 failed")
    }

    @Test("a payload that is not what the published ciphertext holds fails, as does a wrong handshake hash")
    func wrongPayloadOrHashFails() async throws {
        let payload = try Self.altered(Self.xx) { vectors in
            var messages = vectors[0]["messages"] as! [[String: Any]]
            messages[4]["payload"] = "00" + (messages[4]["payload"] as! String).dropFirst(2)
            vectors[0]["messages"] = messages
        }
        let wrongPayload = try await Self.run(payload)
        #expect(wrongPayload.failed == 1 && wrongPayload.failures[0].contains("messages[4] (transport, initiator to responder)"), "\(wrongPayload.failures)")

        let hash = try Self.altered(Self.xx) { vectors in
            vectors[0]["handshake_hash"] = String(repeating: "ab", count: 32)
        }
        let wrongHash = try await Self.run(hash)
        #expect(wrongHash.failed == 1 && wrongHash.failures[0].contains("the handshake hash is c8e5f64e"), "\(wrongHash.failures)")
    }

    @Test("a pre-shared key that differs between the sides fails at the first message the responder reads")
    func mismatchedPresharedKeyFails() async throws {
        let bytes = try Self.altered(Self.psk) { vectors in
            var keys = vectors[0]["resp_psks"] as! [String]
            keys[0] = String(repeating: "00", count: 32)
            vectors[0]["resp_psks"] = keys
        }
        let report = try await Self.run(bytes)
        #expect(report.failed == 1)
        #expect(report.failures.first?.contains("messages[0] (handshake, initiator to responder): the initiator's payload did not authenticate") == true,
                "\(report.failures)")
    }

    @Test("a vector the mesh runs with a missing field, bad hex or the wrong number of keys fails with the field named; the others still run")
    func unreadableVectorsFail() async throws {
        let cases: [(change: (inout [String: Any]) -> Void, says: String)] = [
            ({ $0["init_ephemeral"] = nil }, "the field init_ephemeral is missing"),
            ({ $0["resp_static"] = "not hex" }, "the field resp_static is not hex digits"),
            ({ $0["resp_static"] = "abcd" }, "the field resp_static holds 2 bytes, not 32"),
            ({ $0["init_psks"] = [String(repeating: "11", count: 32)] }, "init_psks lists 1; XX takes 0 pre-shared keys"),
            ({ $0["messages"] = [] }, "it has 0 messages"),
            ({ $0["messages"] = "none" }, "the field messages is missing or not a list"),
        ]
        for (change, says) in cases {
            let report = try await Self.run(Self.altered(Self.xx) { change(&$0[1]) })
            #expect(report.passed == 1 && report.failed == 1, "\(says)")
            #expect(report.failures.first?.contains("vector 2 (Noise_XX_25519_ChaChaPoly_SHA256") == true, "\(report.failures)")
            #expect(report.failures.first?.contains(says) == true, "\(report.failures)")
        }
    }

    @Test("bytes that are no vector file get a clear error, not a crash")
    func badFilesRefused() throws {
        let cases: [([UInt8], NoiseVectorFileError)] = [
            (Array("not json".utf8), .notJSON),
            (Array("{\"vector\": []}".utf8), .noVectorList),
            (Array("[1, 2]".utf8), .noVectorList),
            (Array("{\"vectors\": [1]}".utf8), .vectorNotAnObject(number: 1)),
            (Array("{\"vectors\": [{\"protocol_name\": 7}]}".utf8), .noProtocolName(number: 1)),
            ([UInt8](repeating: 0x20, count: NoiseVectorFile.maximumBytes + 1), .tooLarge(NoiseVectorFile.maximumBytes + 1)),
        ]
        for (bytes, expected) in cases {
            #expect(throws: expected) { try NoiseVectorFile(bytes: bytes) }
        }
        #expect(NoiseVectorFileError.notJSON.description.contains("{\"vectors\": [...]}"))
    }

    @Test("vectors of other protocols are skipped and counted, whatever fields they have")
    func otherProtocolsSkipped() async throws {
        let names = ["Noise_NN_25519_ChaChaPoly_SHA256", "Noise_XX_448_ChaChaPoly_SHA256", "Noise_XX_25519_AESGCM_SHA256",
                     "Noise_XX_25519_ChaChaPoly_BLAKE2s", "Noise_XXfallback_25519_ChaChaPoly_SHA256", "Noise_XXpsk4_25519_ChaChaPoly_SHA256",
                     "Noise_XXpsk2+psk1_25519_ChaChaPoly_SHA256", "NoisePSK_XX_25519_ChaChaPoly_SHA256", "Noise_XX_25519_ChaChaPoly"]
        let bytes = try Self.altered(Self.xx) { vectors in
            vectors += names.map { ["protocol_name": $0, "messages": "whatever"] }
        }
        let report = try await Self.run(bytes)
        #expect(report.skipped == names.count && report.passed == 2 && report.failed == 0, "\(report.lines)")
    }
}
