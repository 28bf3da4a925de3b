import ArcusAgent
import ArcusCRDT
import Foundation

/// An `arcus agent` process a benchmark started, as a user runs it: its ready line read, a
/// client for its HTTP API, and its peak resident size (VmHWM) read until it stops.
///
/// Its standard output and error go to files beside its data directory, so that a failure can
/// quote the agent's last words.
final class AgentProcess {
    let name: String
    let client: AgentClient
    /// Where its LAN transport listens (the ready line's `lan`), port bound.
    let lanAddress: String?
    private let process: Process
    private let errors: URL
    /// The largest VmHWM read, in KiB: the peak while it ran, as far as the last reading.
    private(set) var peakKiB = 0
    /// The largest anonymous resident size read (RssAnon), in KiB: of the peak, what the agent
    /// allocated rather than the file pages of its code. Sampled, so it may miss a short spike.
    private(set) var peakAnonymousKiB = 0
    /// How it ended, once `stop()` or an early exit has been seen.
    private(set) var termination: Termination?

    struct Termination: CustomStringConvertible {
        let status: Int32
        let bySignal: Bool

        var description: String { bySignal ? "killed by signal \(status)\(status == SIGKILL ? " (SIGKILL: the OOM killer, or the bench)" : "")" : "exit status \(status)" }
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    /// Starts `executable agent arguments…` (through `wrap`, which may put it in a cgroup first),
    /// and waits up to `patience` for its ready line.
    init(
        name: String, executable: URL, arguments: [String], environment: [String: String], logs directory: URL,
        wrap: ([String]) -> [String] = { $0 }, patience: Duration = .seconds(60)
    ) async throws {
        self.name = name
        let output = directory.appendingPathComponent("\(name).out")
        errors = directory.appendingPathComponent("\(name).err")
        for file in [output, errors] { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
        let command = wrap([executable.path, "agent"] + arguments)
        process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: errors)
        process.standardInput = FileHandle.nullDevice
        try process.run()

        let started = ContinuousClock.now
        while true {
            switch AgentReadyLine.look(at: process, output: output) {
            case .ready(let line):
                client = try AgentClient(url: line.http, tokenFile: line.tokenFile)
                lanAddress = line.lan
            case .exited(let status):
                throw BenchError("the \(name) agent exited (\(status)) before it was ready: \(Self.lastLines(of: errors))")
            case .starting:
                if ContinuousClock.now - started > patience {
                    process.terminate()
                    throw BenchError("the \(name) agent printed no ready line within \(patience): \(Self.lastLines(of: errors))")
                }
                try await Task.sleep(for: .milliseconds(20))
                continue
            }
            break
        }
        sampleMemory()
    }

    /// Reads VmHWM now; returns the resident size now, in KiB.
    @discardableResult
    func sampleMemory() -> Int? {
        guard process.isRunning, let reading = try? ResidentMemory.read(pid: pid) else { return nil }
        peakKiB = max(peakKiB, reading.peakKiB)
        peakAnonymousKiB = max(peakAnonymousKiB, reading.anonymousKiB ?? 0)
        return reading.residentKiB
    }

    /// Reads VmHWM a last time, then stops the agent with SIGTERM (SIGKILL after `patience`) and
    /// waits for it to exit.
    func stop(patience: Duration = .seconds(60)) async -> Termination {
        if let termination { return termination }
        sampleMemory()
        if process.isRunning {
            kill(pid, SIGTERM)
            let asked = ContinuousClock.now
            var killed = false
            while process.isRunning {
                if !killed, ContinuousClock.now - asked > patience {
                    kill(pid, SIGKILL)
                    killed = true
                }
                // Not `Task.sleep`: in a cancelled bench it returns at once, and this would spin;
                // a cancelled bench still has to reap its agents.
                await withCheckedContinuation { (resumed: CheckedContinuation<Void, Never>) in
                    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) { resumed.resume() }
                }
            }
        }
        process.waitUntilExit()
        let ended = Termination(status: process.terminationStatus, bySignal: process.terminationReason == .uncaughtSignal)
        termination = ended
        return ended
    }

    /// The last lines the agent wrote to standard error.
    var lastWords: String { Self.lastLines(of: errors) }

    private static func lastLines(of errors: URL) -> String {
        let text = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        let lines = text.split(separator: "\n").suffix(5)
        return lines.isEmpty ? "(nothing on standard error)" : lines.joined(separator: "\n")
    }
}
