import ArcusCRDT
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Another local user cannot read an agent's data: the data directory is 0700 and everything
/// in it private (directories 0700, files 0600), whatever the umask the agent was started
/// with; a directory an earlier version left open is tightened at start with one log line; one
/// that belongs to another user is refused with what to do.
@Suite(.serialized)
struct AgentDataDirectoryTests {
    /// Every directory and file under `root` (the root included) with its mode.
    static func modes(under root: String) -> [(path: String, directory: Bool, mode: mode_t)] {
        var found: [(String, Bool, mode_t)] = []
        var pending = [root]
        while let path = pending.popLast() {
            var status = stat()
            guard lstat(path, &status) == 0 else { continue }
            let isDirectory = status.st_mode & S_IFMT == S_IFDIR
            found.append((path, isDirectory, status.st_mode & 0o777))
            if isDirectory {
                pending += ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).map { (path as NSString).appendingPathComponent($0) }
            }
        }
        return found
    }

    static func expectPrivate(_ root: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for entry in modes(under: root) {
            #expect(entry.mode == (entry.directory ? 0o700 : 0o600),
                    "\(entry.path) has mode \(String(entry.mode, radix: 8))", sourceLocation: sourceLocation)
        }
    }

    static func uploadPath(_ id: String) -> String { "/v1/attachments?collection=photos&id=\(id)&field=image" }

    @Test("an agent started with umask 000 keeps its data private: the directory, database, WAL, lock, identity, blobs and an upload being received")
    func privateUnderUmask000() async throws {
        let scratch = try MeshScratch("modes")
        defer { scratch.remove() }
        let data = scratch.data("a")
        let agent = try await RunningAgent.launch(data: data, ["--config", scratch.config.path], umask: "000")
        defer { agent.dismiss() }

        // An upload held half-way, so that the file it is received into can be looked at.
        let (body, feed) = AsyncStream<ByteBuffer>.makeStream()
        var request = HTTPClientRequest(url: agent.url + Self.uploadPath("p1"))
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.body = .stream(body, length: .known(Int64(200_000)))
        request = agent.authorized(request)
        let upload = Task { try await HTTPClient.shared.execute(request, timeout: .seconds(60)) }
        feed.yield(ByteBuffer(bytes: [UInt8](repeating: 1, count: 100_000)))
        var staging: (path: String, directory: Bool, mode: mode_t)?
        for _ in 0..<600 where staging == nil {
            staging = Self.modes(under: data).first { ($0.path as NSString).lastPathComponent.hasPrefix(".upload-") }
            if staging == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let received = try #require(staging, "no upload file appeared in \(data)")
        #expect(received.mode == 0o600, "the upload is received into a file of mode \(String(received.mode, radix: 8))")
        feed.yield(ByteBuffer(bytes: [UInt8](repeating: 2, count: 100_000)))
        feed.finish()
        let response = try await upload.value
        #expect(response.status == .created)

        let found = Self.modes(under: data)
        let names = Set(found.map { ($0.path as NSString).lastPathComponent })
        for expected in ["store.sqlite", "store.sqlite-wal", "store.sqlite-shm", "arcus.lock", "identity", "attachments"] {
            #expect(names.contains(expected), "no \(expected) in \(names.sorted())")
        }
        #expect(found.contains { !$0.directory && $0.path.contains("/attachments/") }, "no blob in \(found.map(\.path))")
        Self.expectPrivate(data)
        #expect(!agent.log.contains("made the data directory"), "a new directory needs no tightening: \(agent.log)")
    }

    @Test("a data directory an earlier version left open is made private at start, with one log line saying what changed")
    func tightenedAtStart() async throws {
        let scratch = try MeshScratch("modes")
        defer { scratch.remove() }
        let data = scratch.data("a")
        var agent = try await RunningAgent.launch(data: data, ["--config", scratch.config.path])
        let reply = try await agent.request(.POST, Self.uploadPath("p1"), body: "a small blob")
        #expect(reply.status == 201, "\(reply.body)")
        #expect(await agent.halt() == 0)
        // As an earlier version left it with the usual umask. (The identity and the API token were
        // always 0600; one that others may read is refused, as what it holds may have leaked.)
        for entry in Self.modes(under: data) where !entry.path.hasSuffix("/identity") && !entry.path.hasSuffix("/api-token") {
            #expect(chmod(entry.path, entry.directory ? 0o755 : 0o644) == 0)
        }

        agent = try await RunningAgent.launch(data: data, ["--config", scratch.config.path])
        defer { agent.dismiss() }
        Self.expectPrivate(data)
        let lines = agent.log.split(separator: "\n").filter { $0.contains("made the data directory") }
        #expect(lines.count == 1, "\(agent.log)")
        let line = String(lines.first ?? "")
        for expected in ["the data directory 755 → 700", "store.sqlite 644 → 600", "arcus.lock 644 → 600", "1 attachment file → 0600"] {
            #expect(line.contains(expected), "\(line)")
        }
        #expect(line.contains("warning"), "\(line)")
        // The agent serves the blob it had.
        let hash = try #require(try await agent.execute("SELECT * FROM photos").json?["items"]?.arrayValue?.first?["image"]?["_attachment"]?.stringValue)
        let blob = try await agent.request(.GET, "/v1/attachments/" + hash)
        #expect(blob.status == 200 && blob.body == "a small blob", "\(blob.status) \(blob.body)")
    }

    @Test("a data directory that belongs to another user is refused at start, saying whose it is and what to do",
          .enabled(if: geteuid() == 0, "needs root to give the directory away"))
    func anotherUsersDirectory() async throws {
        let scratch = try MeshScratch("modes")
        defer { scratch.remove() }
        let data = scratch.data("a")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        #expect(chown(data, 65_534, 65_534) == 0)
        do {
            let agent = try await RunningAgent.launch(data: data, ["--config", scratch.config.path])
            await agent.halt()
            Issue.record("the agent started on another user's directory")
        } catch {
            #expect("\(error)".contains("belongs to user 65534") && "\(error)".contains("chown"), "\(error)")
        }
    }
}

/// Reading the JSON answers.
fileprivate extension Value {
    subscript(key: String) -> Value? { objectValue?[key] }

    var arrayValue: [Value]? { if case .array(let items) = self { return items } else { return nil } }
}
