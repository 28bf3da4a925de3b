import ArcusAgent
import ArcusCRDT
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// An `arcus agent` process on a data directory of its own, with its API on a free port of
/// 127.0.0.1, found through the ready line it prints. Stop it with `stop()` (SIGTERM).
final class RunningAgent: @unchecked Sendable {
    // @unchecked: the process and the files are only touched by the test that owns this value.
    let process: Process
    let url: String
    let peer: String
    let standardOutput: URL
    let standardError: URL
    /// The API token, from the file the ready line names (`DIR/api-token`); empty for an agent
    /// that has none.
    let token: String

    /// Generous: the agent is ready in well under a second, even on a loaded 2-core machine.
    static let patience: TimeInterval = 60

    /// `start`, from async tests. (Foundation's Process notices a child's exit reliably only on
    /// the thread that waits for it, so this does not move the wait to a thread of its own.)
    static func launch(data: String, _ extra: [String] = [], environment: [String: String] = [:], umask: String? = nil) async throws -> RunningAgent {
        try start(data: data, extra, environment: environment, umask: umask)
    }

    /// - Parameter environment: variables set for the agent over this process's own.
    /// - Parameter umask: the agent's umask (octal, as the shell's `umask` takes it); the
    ///   test process's own when nil.
    static func start(data: String, _ extra: [String] = [], environment: [String: String] = [:], umask: String? = nil) throws -> RunningAgent {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-agent-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let out = scratch.appendingPathComponent("out"), err = scratch.appendingPathComponent("err")
        FileManager.default.createFile(atPath: out.path, contents: nil)
        FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = Process()
        process.executableURL = try ArcusProcess.executable()
        process.arguments = ["agent", "--data", data, "--http", "127.0.0.1:0", "--name", "test-agent"] + extra
        if let umask, let arcus = process.executableURL {
            // The shell sets it and becomes the agent (exec): the same process, as a user runs it.
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "umask \(umask) && exec \"$0\" \"$@\"", arcus.path] + (process.arguments ?? [])
        }
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        let deadline = Date().addingTimeInterval(patience)
        while Date() < deadline {
            switch AgentReadyLine.look(at: process, output: out) {
            case .ready(let ready):
                #expect(ready.fields["agent"] == "ready")
                // An agent from before the API had a token (ARCUS_BINARY, to show that a test fails
                // there) names none: its requests then go with an empty one.
                let tokenFile = ready.tokenFile ?? (data as NSString).appendingPathComponent("api-token")
                let token = (try? String(contentsOfFile: tokenFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
                return RunningAgent(process: process, url: ready.http, peer: ready.peer ?? "", standardOutput: out, standardError: err, token: token)
            case .exited(let status):
                let error = (try? String(contentsOf: err, encoding: .utf8)) ?? ""
                throw ArcusProcess.ProcessError("the agent exited with status \(status) before it was ready: \(error)")
            case .starting:
                usleep(20_000)
            }
        }
        process.terminate()
        throw ArcusProcess.ProcessError("the agent printed no ready line within \(patience) s")
    }

    private init(process: Process, url: String, peer: String, standardOutput: URL, standardError: URL, token: String) {
        self.process = process
        self.url = url
        self.peer = peer
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.token = token
    }

    var log: String { (try? String(contentsOf: standardError, encoding: .utf8)) ?? "" }

    /// The API's port, from its URL.
    var port: Int { URL(string: url)?.port ?? 0 }

    /// What the agent printed on standard output: its ready line.
    var printed: String { (try? String(contentsOf: standardOutput, encoding: .utf8)) ?? "" }

    /// Sends SIGTERM and waits for the process to end; returns its exit status (nil if it did
    /// not end in time, after which it is killed).
    @discardableResult
    func stop(signal: Int32 = SIGTERM) -> Int32? {
        guard process.isRunning else { return process.terminationStatus }
        kill(process.processIdentifier, signal)
        return waitForExit()
    }

    func waitForExit() -> Int32? {
        let deadline = Date().addingTimeInterval(Self.patience)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        process.waitUntilExit()
        return process.terminationReason == .exit ? process.terminationStatus : -process.terminationStatus
    }

    struct Reply {
        var status: Int
        var body: String
        var json: Value? { try? Value(json: body) }
        var error: String? { if case .object(let object)? = json, case .string(let text)? = object["error"] { return text } else { return nil } }
    }

    /// One request to the API, with the agent's token and, with a body, `contentType`.
    func request(_ method: HTTPMethod, _ path: String, body: String? = nil, contentType: String = "application/json") async throws -> Reply {
        var request = authorized(HTTPClientRequest(url: url + path))
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        return Reply(status: Int(response.status.code), body: String(buffer: try await response.body.collect(upTo: 64 << 20)))
    }

    /// `request` with the agent's token.
    func authorized(_ request: HTTPClientRequest) -> HTTPClientRequest {
        var request = request
        request.headers.add(name: "Authorization", value: "Bearer " + token)
        return request
    }

    func execute(_ statement: String) async throws -> Reply {
        try await request(.POST, "/v1/execute", body: Value.object(["statement": .string(statement)]).jsonString)
    }

    /// Runs `statement` every 100 ms until its reply contains `text`, for up to 60 s (discovery,
    /// the handshake and a sync take about a second on loopback). Returns whether it did, and
    /// the last reply.
    func wait(until statement: String, contains text: String) async throws -> (found: Bool, reply: String) {
        var reply = ""
        for _ in 0..<600 {
            reply = (try? await execute(statement).body) ?? ""
            if reply.contains(text) { return (true, reply) }
            try await Task.sleep(for: .milliseconds(100))
        }
        return (false, reply)
    }
}
