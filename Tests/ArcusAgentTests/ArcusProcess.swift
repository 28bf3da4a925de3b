import ArcusTestSupport
import Foundation

/// The `arcus` executable built beside these tests, run the way a user runs it.
struct ArcusProcess {
    struct Outcome {
        var status: Int32
        var standardOutput: String
        var standardError: String
    }

    /// The binary: `ARCUS_BINARY`, or `arcus` in the build products directory that holds this
    /// test bundle (`swift build --build-tests` builds both).
    static func executable() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["ARCUS_BINARY"] { return URL(fileURLWithPath: path) }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while directory.path != "/" {
            directory.deleteLastPathComponent()
            let candidate = directory.appendingPathComponent("arcus")
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue {
                return candidate
            }
        }
        throw ProcessError("no arcus executable next to the tests; run `swift build --build-tests` first, or set ARCUS_BINARY")
    }

    struct ProcessError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Starts `arcus arguments…` with standard output going to `output` (a file, so that what it
    /// wrote survives its death); the caller waits or kills.
    static func start(_ arguments: [String], output: URL) throws -> ChildProcess {
        FileManager.default.createFile(atPath: output.path, contents: nil)
        return try ChildProcess(executable: try executable().path, arguments: arguments, standardOutput: output.path)
    }

    /// Runs `arcus arguments…` to completion, waiting on a thread of its own. Never on a thread
    /// of the cooperative pool: it has one thread per core, and the tests that run beside this
    /// one hold agents in process, whose sessions and API need that pool. A wait there takes a
    /// thread from them: five `arcus peers` at once against an agent in this process left it none
    /// to answer with, and every one failed after 120 s.
    /// - Parameters:
    ///   - environment: variables set over this process's own (an empty value removes one).
    ///   - user: a uid to run the command as (and its group, the same number), through
    ///     setpriv(1); only root may.
    static func run(_ arguments: [String], environment: [String: String] = [:], asUser user: UInt32? = nil) async throws -> Outcome {
        try await onThreadOfItsOwn { try runBlocking(arguments, environment: environment, asUser: user) }
    }

    private static func runBlocking(_ arguments: [String], environment: [String: String], asUser user: UInt32?) throws -> Outcome {
        var executable = try executable().path, arguments = arguments
        if let user {
            arguments = ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", "--", executable] + arguments
            executable = "/usr/bin/setpriv"
        }
        let variables = environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 }.filter { !$0.value.isEmpty }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let out = scratch.appendingPathComponent("out"), err = scratch.appendingPathComponent("err")
        let process = try ChildProcess(executable: executable, arguments: arguments, environment: variables,
                                       standardOutput: out.path, standardError: err.path)
        // A command that should end but does not (an agent that started when it should have
        // refused) must fail the test, not hang the run: it is terminated after 120 s.
        let pid = process.processIdentifier
        let watchdog = DispatchWorkItem { kill(pid, SIGTERM) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 120, execute: watchdog)
        process.waitUntilExit()
        watchdog.cancel()
        return Outcome(status: process.terminationStatus,
                       standardOutput: try String(contentsOf: out, encoding: .utf8),
                       standardError: try String(contentsOf: err, encoding: .utf8))
    }
}
