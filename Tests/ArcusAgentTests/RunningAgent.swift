import ArcusAgent
import ArcusCRDT
import ArcusTestSupport
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// An `arcus agent` process on a data directory of its own, with its API on a free port of
/// 127.0.0.1, found through the ready line it prints. Stop it with `stop()` (SIGTERM).
final class RunningAgent: @unchecked Sendable {
    // @unchecked: the files are only touched by the test that owns this value.
    let process: ChildProcess
    let url: String
    let peer: String
    /// Where its standard output and error go: removed with this value.
    private let scratch: URL
    let standardOutput: URL
    let standardError: URL
    /// The API token, from the file the ready line names (`DIR/api-token`); empty for an agent
    /// that has none.
    let token: String

    /// Generous: the agent is ready in well under a second, even on a loaded 2-core machine.
    static let patience: TimeInterval = 60

    /// `start` on a thread of its own, so that waiting for the ready line leaves the cooperative
    /// pool (one thread per core) to the agents and sessions that tests run in process.
    static func launch(data: String, _ extra: [String] = [], environment: [String: String] = [:], umask: String? = nil) async throws -> RunningAgent {
        try await onThreadOfItsOwn { try start(data: data, extra, environment: environment, umask: umask) }
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
        var executable = try ArcusProcess.executable().path
        var arguments = ["agent", "--data", data, "--http", "127.0.0.1:0", "--name", "test-agent"] + extra
        if let umask {
            // The shell sets it and becomes the agent (exec): the same process, as a user runs it.
            arguments = ["-c", "umask \(umask) && exec \"$0\" \"$@\"", executable] + arguments
            executable = "/bin/sh"
        }
        let process = try ChildProcess(
            executable: executable, arguments: arguments,
            environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 },
            standardOutput: out.path, standardError: err.path)
        let deadline = Date().addingTimeInterval(patience)
        while Date() < deadline {
            if let ready = AgentReadyLine(output: (try? String(contentsOf: out, encoding: .utf8)) ?? "") {
                #expect(ready.fields["agent"] == "ready")
                // An agent from before the API had a token (ARCUS_BINARY, to show that a test fails
                // there) names none: its requests then go with an empty one.
                let tokenFile = ready.tokenFile ?? (data as NSString).appendingPathComponent("api-token")
                let token = (try? String(contentsOfFile: tokenFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
                return RunningAgent(process: process, url: ready.http, peer: ready.peer ?? "", scratch: scratch, standardOutput: out, standardError: err, token: token)
            }
            guard process.isRunning else {
                let error = (try? String(contentsOf: err, encoding: .utf8)) ?? ""
                try? FileManager.default.removeItem(at: scratch)
                throw ArcusProcess.ProcessError("the agent exited with status \(process.terminationStatus) before it was ready: \(error)")
            }
            usleep(20_000)
        }
        process.terminate(signal: SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: scratch)
        throw ArcusProcess.ProcessError("the agent printed no ready line within \(patience) s")
    }

    private init(process: ChildProcess, url: String, peer: String, scratch: URL, standardOutput: URL, standardError: URL, token: String) {
        self.scratch = scratch
        self.process = process
        self.url = url
        self.peer = peer
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.token = token
    }

    deinit { try? FileManager.default.removeItem(at: scratch) }

    var log: String { (try? String(contentsOf: standardError, encoding: .utf8)) ?? "" }

    /// The API's port, from its URL.
    var port: Int { URL(string: url)?.port ?? 0 }

    /// What the agent printed on standard output: its ready line.
    var printed: String { (try? String(contentsOf: standardOutput, encoding: .utf8)) ?? "" }

    /// Sends SIGTERM and waits for the process to end; returns its exit status (minus the
    /// signal that ended it), or nil if it did not end in time, after which it is killed.
    /// Blocks the calling thread: async tests that go on working after it use `halt`.
    @discardableResult
    func stop(signal: Int32 = SIGTERM) -> Int32? {
        process.terminate(signal: signal)
        return waitForExit()
    }

    /// Sends SIGTERM and leaves the wait for the exit (and SIGKILL after `patience`) to a thread
    /// of its own: what a `defer` in an async test calls, since it cannot await `halt`. A test
    /// that waited there held a thread of the cooperative pool for the agent's whole shutdown,
    /// which the in-process agents of the tests beside it needed (see `ArcusProcess.run`).
    func dismiss(signal: Int32 = SIGTERM) {
        process.terminate(signal: signal)
        Thread { _ = self.waitForExit() }.start()
    }

    /// `stop` on a thread of its own, leaving the cooperative pool free.
    @discardableResult
    func halt(signal: Int32 = SIGTERM) async -> Int32? {
        await onThreadOfItsOwn { self.stop(signal: signal) }
    }

    func waitForExit() -> Int32? {
        let deadline = Date().addingTimeInterval(Self.patience)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        return process.terminationStatus
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
