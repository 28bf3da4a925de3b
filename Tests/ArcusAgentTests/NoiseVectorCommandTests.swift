import Foundation
import Testing

/// `arcus mesh noise-vectors FILE`, run as a user runs it, on the published vectors kept with the
/// mesh tests (Tests/ArcusMeshTests/Fixtures/noise/README.md).
@Suite
struct NoiseVectorCommandTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("ArcusMeshTests/Fixtures/noise")

    static func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-noise-vectors-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("the shared XX file and the psk file pass: the skipped count, then `N passed, 0 failed` last, exit status 0")
    func publishedVectorsPass() async throws {
        let xx = try await ArcusProcess.run(["mesh", "noise-vectors", Self.fixtures.appendingPathComponent("Noise_XX_25519_ChaChaPoly_SHA256.json").path])
        #expect(xx.status == 0, "\(xx.standardOutput)\(xx.standardError)")
        let lines = xx.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.count == 2 && lines[0].hasPrefix("0 skipped") && lines.last == "2 passed, 0 failed", "\(lines)")

        let psk = try await ArcusProcess.run(["mesh", "noise-vectors", Self.fixtures.appendingPathComponent("Noise_XXpsk_25519_ChaChaPoly.json").path])
        #expect(psk.status == 0, "\(psk.standardOutput)\(psk.standardError)")
        #expect(psk.standardOutput.hasSuffix("1 skipped: protocols the mesh does not run (it runs Noise_XX, with or without psk modifiers, over 25519, ChaChaPoly and SHA256)\n1 passed, 0 failed\n"),
                "\(psk.standardOutput)")
    }

    @Test("a vector with one ciphertext byte flipped fails: a line naming the vector and the message, `1 passed, 1 failed`, exit status 1")
    func flippedByteFails() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        var text = try String(contentsOf: Self.fixtures.appendingPathComponent("Noise_XX_25519_ChaChaPoly_SHA256.json"), encoding: .utf8)
        // Vector 2's transport message messages[3] (responder to initiator): its first byte, 54, becomes 55.
        let published = "54ef0ff0629e1aaa7685a2806ab111cb"
        #expect(text.contains(published))
        text = text.replacingOccurrences(of: published, with: "55ef0ff0629e1aaa7685a2806ab111cb")
        let file = directory.appendingPathComponent("flipped.json")
        try Data(text.utf8).write(to: file)

        let outcome = try await ArcusProcess.run(["mesh", "noise-vectors", file.path])
        #expect(outcome.status == 1)
        let lines = outcome.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.count == 3 && lines.last == "1 passed, 1 failed", "\(lines)")
        #expect(lines.first?.hasPrefix("vector 2 (Noise_XX_25519_ChaChaPoly_SHA256, from mcginty/snow tests/vectors/snow.txt): messages[3] (transport, responder to initiator)") == true,
                "\(lines)")
    }

    @Test("a file that is not vectors, or not there, is refused with a clear error and exit status 2")
    func badFilesRefused() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let notJSON = directory.appendingPathComponent("notes.txt")
        try Data("Noise_XX_25519_ChaChaPoly_SHA256 passes".utf8).write(to: notJSON)
        let bad = try await ArcusProcess.run(["mesh", "noise-vectors", notJSON.path])
        #expect(bad.status == 2 && bad.standardError.contains("is not JSON") && bad.standardOutput.isEmpty, "\(bad.standardError)")

        let missing = try await ArcusProcess.run(["mesh", "noise-vectors", directory.appendingPathComponent("none.json").path])
        #expect(missing.status == 2 && missing.standardError.contains("does not exist"), "\(missing.standardError)")
    }
}
