import ArcusAgent
import ArcusCRDT
import Foundation
import Logging
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The agent's log for field support: rotating compressed files in the data directory, the
/// journal under systemd, `GET /v1/logs` and `arcus logs` to fetch it.
@Suite("Agent logs")
struct AgentLogsTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-logs-\(UUID().uuidString)").path

    @Test("the file is compressed into .1.zst when full, older ones move up, past the count the oldest goes; the last lines read back in order across files")
    func rotation() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var limits = RotatingLogFile.Limits()
        limits.fileBytes = 64 << 10
        limits.files = 3
        let log = try RotatingLogFile(directory: directory, limits: limits)
        let line = { (n: Int) in "line \(n) " + String(repeating: "abcdefgh", count: 12) + "\n" }
        for n in 0..<5000 { log.append(line(n)) }
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(names == ["arcus.log", "arcus.log.1.zst", "arcus.log.2.zst", "arcus.log.3.zst"])
        let current = try #require(FileManager.default.attributesOfItem(atPath: log.currentPath)[.size] as? Int)
        #expect(current <= limits.fileBytes)
        for index in 1...3 {
            let size = try #require(FileManager.default.attributesOfItem(atPath: log.rotatedPath(index))[.size] as? Int)
            #expect(size < limits.fileBytes / 4, "compressed")
            #expect((try FileManager.default.attributesOfItem(atPath: log.rotatedPath(index))[.posixPermissions] as? Int) == 0o600)
        }
        // Lines that fit in the current file alone, then more than it holds: consecutive, ending at the last.
        for count in [10, 1500] {
            let lines = log.recentLines(count)
            #expect(lines.count == count)
            #expect(lines.last == String(line(4999).dropLast()))
            let numbers = lines.compactMap { Int($0.split(separator: " ")[1]) }
            #expect(numbers == Array((5000 - count)..<5000), "\(numbers.prefix(3))…")
        }
        // Asked for more than is kept: everything kept, oldest first.
        let all = log.recentLines(100_000)
        #expect(all.count < 5000 && all.count > 1500)
        #expect(all.last == String(line(4999).dropLast()))
    }

    @Test("a compressed file that is not Zstandard, or whose header claims more than twice a file, ends the reading there: no crash, no gap, nothing allocated for the claim")
    func lyingRotatedFile() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var limits = RotatingLogFile.Limits()
        limits.fileBytes = 64 << 10
        limits.files = 3
        let log = try RotatingLogFile(directory: directory, limits: limits)
        // A Zstandard frame header (magic, then a descriptor: single segment, an 8-byte content
        // size) claiming 2^40 bytes, and plain garbage.
        let huge: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0xE0] + withUnsafeBytes(of: UInt64(1 << 40).littleEndian, Array.init) + [0, 0, 0]
        for (index, bytes) in [(1, [UInt8]("not zstd at all".utf8)), (2, huge)] {
            #expect(FileManager.default.createFile(atPath: log.rotatedPath(index), contents: Data(bytes)))
        }
        log.append("only line\n")
        #expect(log.recentLines(100) == ["only line"])
        try FileManager.default.removeItem(atPath: log.rotatedPath(1))
        #expect(FileManager.default.createFile(atPath: log.rotatedPath(1), contents: Data(huge)))
        #expect(log.recentLines(100) == ["only line"])
    }

    @Test("under systemd (JOURNAL_STREAM names standard error) each record is one line with its syslog priority first")
    func journal() throws {
        var status = stat()
        #expect(fstat(STDERR_FILENO, &status) == 0)
        #expect(JournalStream.isStandardError(environment: ["JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino)"]))
        #expect(!JournalStream.isStandardError(environment: ["JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino + 1)"]))
        #expect(!JournalStream.isStandardError(environment: [:]))
        #expect(!JournalStream.isStandardError(environment: ["JOURNAL_STREAM": "nonsense"]))

        let lines = Lines()
        var logger = Logger(label: "arcus.agent") { LineLogHandler(label: $0, format: .journal) { lines.add($0) } }
        logger.logLevel = .debug
        logger.warning("peer gone\nsecond line", metadata: ["peer": "b"])
        logger.error("disk full")
        logger.debug("detail")
        #expect(lines.all.count == 3)
        #expect(lines.all[0].hasPrefix("<4>arcus.agent: [") && lines.all[0].hasSuffix("peer gone\\nsecond line peer=b\n"), "\(lines.all[0])")
        #expect(lines.all[1].hasPrefix("<3>") && lines.all[2].hasPrefix("<7>"))
        #expect(AgentLogs(journal: true).recentLines(10).failureMessage?.contains("journalctl") == true)
    }

    @Test("a running agent writes DATA/logs/arcus.log; GET /v1/logs and arcus logs read its last lines; a bad count is a 400")
    func fetched() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let agent = try await RunningAgent.launch(data: directory)
        defer { agent.dismiss() }
        let file = (directory as NSString).appendingPathComponent("logs/arcus.log")
        #expect(FileManager.default.fileExists(atPath: file))
        let reply = try await agent.request(.GET, "/v1/logs?lines=50")
        #expect(reply.status == 200)
        // Logged before the ready line (the transports start first).
        #expect(reply.body.contains("transport started"), "\(reply.body)")
        #expect(reply.body.hasPrefix("20") && reply.body.split(separator: "\n").first?.split(separator: " ").first?.hasSuffix("Z") == true, "\(reply.body)")
        #expect(reply.body.split(separator: "\n").count <= 50)
        let printed = try await ArcusProcess.run(["logs", "--agent", agent.url, "--token-file", (directory as NSString).appendingPathComponent("api-token"), "--lines", "5"])
        #expect(printed.status == 0, "\(printed.standardError)")
        // The agent may log between the two reads (the ready line comes after the first request
        // could): the CLI's lines are a run of the log as read after it, at most the 5 asked for.
        let cliLines = printed.standardOutput.split(separator: "\n")
        #expect((1...5).contains(cliLines.count), "\(printed.standardOutput)")
        let after = try await agent.request(.GET, "/v1/logs?lines=1000")
        #expect(after.body.contains(cliLines.joined(separator: "\n") + "\n"), "\(printed.standardOutput)\n---\n\(after.body)")
        for bad in ["0", "100001", "many"] {
            let refused = try await agent.request(.GET, "/v1/logs?lines=" + bad)
            #expect(refused.status == 400 && refused.error?.contains("lines") == true, "\(refused.body)")
        }
    }

    @Test("log_file_bytes and log_files are checked in the configuration file")
    func configuration() throws {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-logs-\(UUID().uuidString).toml").path
        defer { try? FileManager.default.removeItem(atPath: config) }
        try "log_file_bytes = 1000\n".write(toFile: config, atomically: true, encoding: .utf8)
        #expect(throws: CommandError.self) {
            try AgentConfiguration.resolve(dataDirectory: directory, configFile: config, name: nil, http: nil, listen: nil, transports: nil, peers: [], subscriptions: [])
        }
        try "log_file_bytes = 262144\nlog_files = 9\n".write(toFile: config, atomically: true, encoding: .utf8)
        let resolved = try AgentConfiguration.resolve(dataDirectory: directory, configFile: config, name: nil, http: nil, listen: nil, transports: nil, peers: [], subscriptions: [])
        #expect(resolved.logLimits.fileBytes == 262_144 && resolved.logLimits.files == 9)
    }
}

final class Lines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func add(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}

extension Result where Failure == CommandError {
    var failureMessage: String? { if case .failure(let error) = self { error.message } else { nil } }
}
