import ArcusCRDT
import Foundation
import Testing
@testable import ArcusStore

@Suite("Attachments")
struct StoreAttachmentTests {
    @Test("a blob stored from bytes or a file comes back verified, through a token in a document")
    func roundTrip() throws {
        let t = try TemporaryStore()
        let bytes = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let token = try t.store.newAttachment(bytes, metadata: ["name": "photo.jpg"])
        #expect(token.length == 100_000 && token.hash.count == 32)
        try t.store.collection("users").findByID("u").update { $0["avatar"].set(token) }
        let stored = try #require(try t.store.collection("users").findByID("u").exec()?[path: ["avatar", "_attachment"]])
        #expect(stored == .string(token.hashHex))
        let progress = Progress()
        guard case .available(let fetched) = try t.store.fetchAttachment(token, progress: { progress.record($0) }) else {
            Issue.record("the attachment should be available")
            return
        }
        #expect(fetched == bytes)
        #expect(progress.last?.fraction == 1)

        let file = t.directory.appendingPathComponent("input.bin")
        try Data(repeating: 7, count: 300_000).write(to: file)
        let fromFile = try t.store.newAttachment(path: file.path)
        #expect(fromFile.metadata["name"] == "input.bin")
        guard case .available(let again) = try t.store.fetchAttachment(fromFile) else {
            Issue.record("the file attachment should be available")
            return
        }
        #expect(again.count == 300_000)
    }

    @Test("a damaged blob is refused, and an unknown one is reported missing")
    func damaged() throws {
        let t = try TemporaryStore()
        let token = try t.store.newAttachment(Data("hello".utf8))
        let url = try #require(t.store.attachmentFiles.url(for: token.hash))
        try Data("jello".utf8).write(to: url)
        #expect(throws: StoreError.self) { try t.store.fetchAttachment(token) }
        let unknown = AttachmentToken(hash: [UInt8](repeating: 1, count: 32), length: 3)
        guard case .missing = try t.store.fetchAttachment(unknown) else {
            Issue.record("expected .missing")
            return
        }
    }

    @Test("blobs no document references are collected; referenced ones stay")
    func garbage() throws {
        let t = try TemporaryStore()
        let kept = try t.store.newAttachment(Data("kept".utf8))
        let dropped = try t.store.newAttachment(Data("dropped".utf8))
        let replaced = try t.store.newAttachment(Data("replaced".utf8))
        try t.store.collection("d").findByID("1").update { $0["a"].set(kept); $0["b"].set(replaced) }
        try t.store.collection("d").findByID("1").update { $0["b"].remove() }
        #expect(try t.store.collectAttachmentGarbage(grace: 0) == 2)
        #expect(t.store.hasAttachment(kept))
        #expect(!t.store.hasAttachment(dropped))
        #expect(!t.store.hasAttachment(replaced))
    }
}

final class Progress: @unchecked Sendable {
    // Written from the fetch call on this test's own thread only.
    private(set) var last: AttachmentProgress?
    func record(_ progress: AttachmentProgress) { last = progress }
}
