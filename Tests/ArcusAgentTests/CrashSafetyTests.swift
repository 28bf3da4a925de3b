import ArcusStore
import ArcusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Crash safety")
struct CrashSafetyTests {
    @Test("SIGKILL at random moments loses no write that was reported committed", arguments: SeededRandom.seeds(count: 1, test: "crash safety"))
    func killedWriters(seed: UInt64) async throws {
        print("crash safety: seed \(seed) (replay with ARCUS_TEST_SEED=\(seed))")
        var random = SeededRandom(seed: seed)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = directory.appendingPathComponent("data")
        var printed: Set<String> = []
        var next = 0
        let kills = 24
        for round in 0..<kills {
            let output = directory.appendingPathComponent("ids-\(round)")
            let writer = try ArcusProcess.start(["bench", "write-load", "--data", data.path, "--start", String(next)], output: output)
            // Anywhere from opening the store to the thick of writing.
            try await Task.sleep(for: .microseconds(UInt32.random(in: 5_000...400_000, using: &random)))
            kill(writer.processIdentifier, SIGKILL)
            _ = await writer.exit()
            #expect(writer.endedBySignal, "round \(round): the writer ended before it was killed")

            // Only whole lines count: each is one write(2) made after its commit returned.
            let text = try String(contentsOf: output, encoding: .utf8)
            let ids = text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
            printed.formUnion(ids)
            next += ids.count + 1000

            // Reopen after every kill: each printed id is there, and the file is sound.
            let store = try Store(directory: data)
            let found = Set(try store.execute("SELECT _id FROM load").items.compactMap { $0[path: ["_id"]]?.stringValue })
            let lost = printed.subtracting(found)
            #expect(lost.isEmpty, "round \(round): \(lost.count) committed writes lost, e.g. \(lost.sorted().prefix(5))")
            #expect(try store.checkIntegrity() == ["ok"])
        }
        print("crash safety: \(kills) kills, \(printed.count) committed writes, none lost")
        #expect(printed.count > 0, "the writer never committed anything before being killed; the test proved nothing")
    }
}
