import ArcusCRDT
import ArcusTestSupport
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

/// Attachments through the agent: `arcus attachment put` on one agent, `arcus attachment get`
/// on another that fetches the blob over LAN with progress, the fetches under way in
/// `GET /v1/attachments`, and the API's refusals.
@Suite(.serialized)
struct AgentAttachmentTests {
    /// `count` bytes from a seeded generator (the seed is printed, to replay a failure).
    static func randomBytes(_ count: Int, seed: UInt64) -> Data {
        print("AgentAttachmentTests: random bytes seed \(seed)")
        var state = seed
        var bytes = [UInt8](repeating: 0, count: count)
        for i in 0..<count {
            // SplitMix64.
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            bytes[i] = UInt8(truncatingIfNeeded: z ^ (z >> 31))
        }
        return Data(bytes)
    }

    static let subscription = "SELECT * FROM photos"

    /// Agent `b` listens on a port of its own; agent `a` dials it. Both subscribe to photos.
    static func launchPair(_ scratch: MeshScratch) async throws -> (a: RunningAgent, b: RunningAgent, port: Int) {
        let port = try freePort()
        let lan = ["--config", scratch.config.path, "--transports", "lan", "--subscribe", subscription]
        let b = try await RunningAgent.launch(data: scratch.data("b"), lan + ["--listen", "127.0.0.1:\(port)"])
        let a = try await RunningAgent.launch(data: scratch.data("a"), Self.dialler(scratch, port: port))
        return (a, b, port)
    }

    static func dialler(_ scratch: MeshScratch, port: Int) -> [String] {
        ["--config", scratch.config.path, "--transports", "lan", "--subscribe", subscription,
         "--listen", "127.0.0.1:0", "--peer", "127.0.0.1:\(port)"]
    }

    /// `arcus attachment put` of `bytes` (written to a file in `scratch`) into photos/`id`.image on
    /// `agent`; returns the token's hash after checking what the command printed.
    static func put(_ bytes: Data, id: String, on agent: RunningAgent, scratch: MeshScratch) async throws -> String {
        let file = scratch.directory.appendingPathComponent("\(id).bin")
        try bytes.write(to: file)
        let put = try await ArcusProcess.run([
            "attachment", "put", "--agent", agent.url, file.path, "--collection", "photos", "--id", id, "--field", "image",
        ])
        #expect(put.status == 0, "\(put.standardError)")
        let token = try #require(try? Value(json: put.standardOutput), "not JSON: \(put.standardOutput)")
        #expect(token["len"] == .int(Int64(bytes.count)), "\(put.standardOutput)")
        #expect(token["collection"] == "photos" && token["id"] == .string(id) && token["field"] == "image", "\(put.standardOutput)")
        #expect(token["metadata"]?["name"] == .string("\(id).bin"), "\(put.standardOutput)")
        let hash = try #require(token["_attachment"]?.stringValue, "\(put.standardOutput)")
        #expect(hash.count == 64 && hash.allSatisfy(\.isHexDigit))
        // The document holds the token, as queries see it.
        let document = try await agent.execute("SELECT * FROM photos WHERE _id = '\(id)'")
        #expect(document.body.contains(hash) && document.body.contains("\"len\":\(bytes.count)"), "\(document.body)")
        return hash
    }

    static func fetches(_ agent: RunningAgent) async throws -> [Value] {
        let reply = try await agent.request(.GET, "/v1/attachments")
        #expect(reply.status == 200, "\(reply.body)")
        return try #require(reply.json?["fetches"]?.arrayValue, "\(reply.body)")
    }

    @Test("put on one agent, get on another over LAN: the CLI shows progress and writes the same bytes; a fetch with no source waits and resumes")
    func putThenGetAcrossAgents() async throws {
        let scratch = try MeshScratch("attachments")
        defer { scratch.remove() }
        let pair = try await Self.launchPair(scratch)
        var a = pair.a
        let b = pair.b, port = pair.port
        defer { a.stop(); b.stop() }

        let seed = UInt64.random(in: 1...UInt64.max)
        let blob = Self.randomBytes(3 << 20, seed: seed)
        let hash = try await Self.put(blob, id: "p1", on: a, scratch: scratch)
        let (arrived, seen) = try await b.wait(until: "SELECT * FROM photos", contains: hash)
        #expect(arrived, "the document never reached b: \(seen)\n\(a.log)\n\(b.log)")
        #expect(try await Self.fetches(b).isEmpty, "nothing was asked for yet")

        // Watch b's fetches while the CLI gets the blob.
        let watching = Mutex(true)
        let watcher = Task { () -> [Value] in
            var seen: [Value] = []
            while watching.withLock({ $0 }) {
                seen += (try? await Self.fetches(b)) ?? []
                try? await Task.sleep(for: .milliseconds(20))
            }
            return seen
        }
        let out = scratch.directory.appendingPathComponent("p1.out")
        let started = ContinuousClock.now
        let get = try await ArcusProcess.run(["attachment", "get", "--agent", b.url, hash, "--out", out.path])
        let getSeconds = (ContinuousClock.now - started) / .seconds(1)
        watching.withLock { $0 = false }
        let watched = await watcher.value
        #expect(get.status == 0, "\(get.standardError)\n\(b.log)")
        #expect(try Data(contentsOf: out) == blob, "seed \(seed)")
        #expect(!FileManager.default.fileExists(atPath: out.path + ".partial"))
        // The first answer was 202 (b had none of it): at least one progress line, then the summary.
        let lines = get.standardError.split(separator: "\n").map(String.init)
        // Standard error is not a terminal here: whole lines, at most one a second.
        let progress = lines.filter { $0.hasPrefix("fetching \(hash.prefix(8))…: ") }
        #expect(!progress.isEmpty, "no progress lines on standard error: \(get.standardError)")
        #expect(progress.allSatisfy { $0.contains(" of 3.1 MB (") && $0.contains("%)") }, "\(progress)")
        #expect(progress.count <= Int(getSeconds) + 1, "\(progress.count) lines in \(getSeconds) s")
        #expect(!get.standardError.contains("\r"))
        #expect(lines.last == "wrote 3.1 MB to \(out.path)", "\(get.standardError)")
        print("AgentAttachmentTests: progress lines \(progress); /v1/attachments entries seen during the get: \(watched.count)")
        for entry in watched {
            #expect(entry["hash"] == .string(hash), "\(entry)")
            #expect(["waiting", "fetching"].contains(entry["state"]?.stringValue ?? ""), "\(entry)")
            let fetched = entry["bytes_fetched"]?.numberValue ?? -1
            #expect(fetched >= 0 && fetched <= Double(blob.count), "\(entry)")
            // The length came from the token in b's document, before any byte arrived.
            #expect(entry["total_bytes"] == .int(Int64(blob.count)), "\(entry)")
        }
        // Done: nothing under way; the blob is served at once, and b now serves it to others.
        #expect(try await Self.fetches(b).isEmpty)
        let direct = try await HTTPClient.shared.execute(b.authorized(HTTPClientRequest(url: b.url + "/v1/attachments/" + hash)), timeout: .seconds(60))
        #expect(direct.status == .ok)
        #expect(direct.headers.first(name: "Content-Type") == "application/octet-stream")
        #expect(direct.headers.first(name: "Content-Length") == String(blob.count))
        #expect(Data(try await direct.body.collect(upTo: 8 << 20).readableBytesView) == blob)

        // A second blob whose only holder goes away: b waits (one fetch, however often asked),
        // then gets it once a comes back.
        let second = Self.randomBytes(200_000, seed: seed &+ 1)
        let secondHash = try await Self.put(second, id: "p2", on: a, scratch: scratch)
        #expect(try await b.wait(until: "SELECT * FROM photos", contains: secondHash).found, "\(b.log)")
        #expect(await a.halt() == 0)
        // The fetch starts on the first ask; asking again joins it. b's mesh session with a
        // outlives a's links (it waits for a to come back), so the fetch may show as asked of a
        // ("fetching", nothing arrived) or as waiting for a peer; either way nothing arrives.
        for _ in 0..<3 {
            let reply = try await b.request(.GET, "/v1/attachments/" + secondHash)
            #expect(reply.status == 202, "\(reply.body)")
            #expect(reply.json?["hash"] == .string(secondHash) && reply.json?["bytes_fetched"] == .int(0), "\(reply.body)")
            #expect(["waiting", "fetching"].contains(reply.json?["state"]?.stringValue ?? ""), "\(reply.body)")
            try await Task.sleep(for: .milliseconds(200))
        }
        let waiting = try await Self.fetches(b)
        #expect(waiting.count == 1, "one fetch however often it was asked for: \(waiting)")
        #expect(waiting.first?["hash"] == .string(secondHash) && waiting.first?["bytes_fetched"] == .int(0), "\(waiting)")
        #expect(["waiting", "fetching"].contains(waiting.first?["state"]?.stringValue ?? ""), "\(waiting)")
        let list = try await ArcusProcess.run(["attachment", "list", "--agent", b.url])
        #expect(list.status == 0 && list.standardOutput.contains(secondHash) && list.standardOutput.contains("0 B"), "\(list)")
        #expect(list.standardOutput.hasPrefix("HASH"), "\(list.standardOutput)")
        // The status shows it too: as JSON, in `arcus status`, and as a row of the status page
        // with its progress bar (run in headless Chromium).
        let status = try await b.request(.GET, "/v1/status")
        guard case .array(let underWay)? = status.json?["attachments"] else {
            Issue.record("no attachments in GET /v1/status: \(status.body)")
            return
        }
        #expect(underWay.map { $0["hash"] } == [.string(secondHash)], "\(status.body)")
        let summary = try await ArcusProcess.run(["status", "--agent", b.url])
        #expect(summary.standardOutput.split(separator: "\n").contains { $0.hasPrefix("attachments") && $0.contains(String(secondHash.prefix(12))) },
                "\(summary.standardOutput)")
        let dom = try await HeadlessChromium().dumpDOM(b.url + "/#token=" + b.token)
        let row = dom.firstMatch(of: /<tr data-attachment="([0-9a-f]{64})">.*?<\/tr>/)
        #expect(row.map { String($0.output.1) } == secondHash, "\(dom.prefix(4000))")
        #expect(row.map { String($0.output.0).contains("<progress") } == true, "\(dom.prefix(4000))")

        a = try await RunningAgent.launch(data: scratch.data("a"), Self.dialler(scratch, port: port))
        let secondOut = scratch.directory.appendingPathComponent("p2.out")
        let secondGet = try await ArcusProcess.run(["attachment", "get", "--agent", b.url, secondHash, "--out", secondOut.path])
        #expect(secondGet.status == 0, "\(secondGet.standardError)\n\(b.log)")
        #expect(try Data(contentsOf: secondOut) == second, "seed \(seed &+ 1)")
        #expect(try await Self.fetches(b).isEmpty)
        let empty = try await ArcusProcess.run(["attachment", "list", "--agent", b.url])
        #expect(empty.standardOutput == "no attachment fetches under way\n", "\(empty)")
        let stopped = (await a.halt(), await b.halt())
        #expect(stopped.0 == 0 && stopped.1 == 0)
    }

    @Test("the API refuses a bad hash (400), an unreferenced one (404), a missing or empty parameter (400), leaving the store as it was")
    func refusals() async throws {
        let scratch = try MeshScratch("attachment-errors")
        defer { scratch.remove() }
        let agent = try await RunningAgent.launch(data: scratch.data("a"), ["--config", scratch.config.path, "--transports", "loopback"])
        defer { agent.dismiss() }
        let before = try await agent.execute("SELECT * FROM photos")
        #expect(before.status == 200)

        let short = try await agent.request(.GET, "/v1/attachments/abc123")
        #expect(short.status == 400 && short.error?.contains("64 hex digits") == true, "\(short.body)")
        let notHex = try await agent.request(.GET, "/v1/attachments/" + String(repeating: "zz", count: 32))
        #expect(notHex.status == 400, "\(notHex.body)")

        let unknown = String(repeating: "ab", count: 32)
        let missing = try await agent.request(.GET, "/v1/attachments/" + unknown)
        #expect(missing.status == 404, "\(missing.body)")
        #expect(missing.error?.hasPrefix("no document in this store references attachment \(unknown)") == true, "\(missing.body)")
        #expect(try await Self.fetches(agent).isEmpty, "an unreferenced hash must not start a fetch")

        for (query, parameter) in [
            ("?id=x&field=image", "collection"), ("?collection=photos&field=image", "id"), ("?collection=photos&id=x", "field"),
            ("?collection=&id=x&field=image", "collection"),
        ] {
            let reply = try await agent.request(.POST, "/v1/attachments" + query, body: "some bytes", contentType: "application/octet-stream")
            #expect(reply.status == 400, "\(query): \(reply.body)")
            #expect(reply.error?.contains("?\(parameter)=") == true, "\(query): \(reply.body)")
        }
        let idField = try await agent.request(.POST, "/v1/attachments?collection=photos&id=x&field=_id", body: "some bytes", contentType: "application/octet-stream")
        #expect(idField.status == 400, "\(idField.body)")
        let emptyPart = try await agent.request(.POST, "/v1/attachments?collection=photos&id=x&field=a..b", body: "some bytes", contentType: "application/octet-stream")
        #expect(emptyPart.status == 400, "\(emptyPart.body)")

        // A body announced past the limit is refused before it is read: 413.
        var large = agent.authorized(HTTPClientRequest(url: agent.url + "/v1/attachments?collection=photos&id=big&field=image"))
        large.method = .POST
        large.headers.add(name: "Content-Type", value: "application/octet-stream")
        let (pieces, continuation) = AsyncStream.makeStream(of: ByteBuffer.self)
        continuation.yield(ByteBuffer(repeating: 7, count: 1024))
        large.body = .stream(pieces, length: .known(Int64(257 << 20)))
        let refused = try await HTTPClient.shared.execute(large, timeout: .seconds(30))
        continuation.finish()
        #expect(refused.status.code == 413)
        let refusal = String(buffer: try await refused.body.collect(upTo: 1 << 20))
        #expect(refusal.contains("at most \(256 << 20) are taken"), "\(refusal)")

        // Nothing was written, and no upload was left behind in the data directory.
        let after = try await agent.execute("SELECT * FROM photos")
        #expect(after.body == before.body, "\(after.body)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: scratch.data("a")).filter { $0.hasPrefix(".upload-") }
        #expect(leftovers.isEmpty, "\(leftovers)")

        // The CLI says the same, with exit status 2.
        let cli = try await ArcusProcess.run(["attachment", "get", "--agent", agent.url, unknown, "--out", scratch.directory.appendingPathComponent("x").path])
        #expect(cli.status == 2 && cli.standardError.contains("no document in this store references"), "\(cli)")
        #expect(!FileManager.default.fileExists(atPath: scratch.directory.appendingPathComponent("x").path))

        // A small upload through the API: 201, the document is created, a GET serves the bytes.
        let posted = try await agent.request(.POST, "/v1/attachments?collection=photos&id=small&field=meta.thumb", body: "tiny blob", contentType: "application/octet-stream")
        #expect(posted.status == 201, "\(posted.body)")
        let hash = try #require(posted.json?["_attachment"]?.stringValue, "\(posted.body)")
        let got = try await agent.request(.GET, "/v1/attachments/" + hash)
        #expect(got.status == 200 && got.body == "tiny blob", "\(got.body)")
        let document = try await agent.execute("SELECT * FROM photos WHERE _id = 'small'")
        #expect(document.body.contains("\"thumb\":{\"_attachment\":\"\(hash)\""), "\(document.body)")
        #expect(await agent.halt() == 0)
    }

    @Test("an upload a crash cut off leaves a staging file, which the agent removes when it next starts; nothing else goes")
    func leftoverUploadRemovedAtStart() async throws {
        let scratch = try MeshScratch("attachment-leftover")
        defer { scratch.remove() }
        let data = scratch.data("a")
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let leftover = (data as NSString).appendingPathComponent(".upload-2F1C")
        let unrelated = (data as NSString).appendingPathComponent("notes.txt")
        try Data(repeating: 7, count: 10_000).write(to: URL(fileURLWithPath: leftover))
        try Data("keep".utf8).write(to: URL(fileURLWithPath: unrelated))
        let agent = try await RunningAgent.launch(data: data, ["--config", scratch.config.path, "--transports", "loopback"])
        defer { agent.dismiss() }
        #expect(!FileManager.default.fileExists(atPath: leftover))
        #expect(FileManager.default.fileExists(atPath: unrelated))
        #expect(agent.log.contains("removed 1 partial upload(s)"), "\(agent.log)")
        #expect(await agent.halt() == 0)
    }
}

/// Reading the JSON answers.
fileprivate extension Value {
    subscript(key: String) -> Value? { objectValue?[key] }

    var arrayValue: [Value]? { if case .array(let items) = self { return items } else { return nil } }
}
