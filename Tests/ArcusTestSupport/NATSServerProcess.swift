import Foundation
import Glibc

/// A nats-server of its own for one test: listening on 127.0.0.1 only, on a free port, with a
/// fresh store directory. It never outlives the test process: a small shell guard stops it when
/// this process goes away, even by a crash.
public final class NATSServerProcess: @unchecked Sendable {
    // Mutable state (`process`) is guarded by `lock`; everything else is immutable.

    public enum Failure: Error, CustomStringConvertible {
        case notInstalled
        case didNotStart(String)

        public var description: String {
            switch self {
            case .notInstalled: "nats-server not found: run Tools/install-deps.sh"
            case .didNotStart(let detail): "nats-server did not start: \(detail)"
            }
        }
    }

    public let port: Int
    public var url: String { "nats://127.0.0.1:\(port)" }
    /// The directory of this server's JetStream store, log and pid file.
    public let directory: URL
    public var logFile: URL { directory.appendingPathComponent("server.log") }

    private let executable: String
    private let arguments: [String]
    private let lock = NSLock()
    private var process: Process?

    /// Starts `nats-server -a 127.0.0.1 -p PORT [-js -sd DIR] EXTRA` and returns once its port
    /// accepts connections (within 10 s). `port` defaults to a free one.
    public static func start(
        jetStream: Bool = true,
        extraArguments: [String] = [],
        port requestedPort: Int? = nil
    ) throws -> NATSServerProcess {
        guard let executable = findExecutable() else { throw Failure.notInstalled }
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("arcus-nats-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let port = try requestedPort ?? freePort()
        var arguments = ["-a", "127.0.0.1", "-p", String(port)]
        if jetStream {
            arguments += ["-js", "-sd", directory.appendingPathComponent("store").path]
        }
        arguments += ["-l", directory.appendingPathComponent("server.log").path]
        arguments += ["-P", directory.appendingPathComponent("server.pid").path]
        arguments += extraArguments
        let server = NATSServerProcess(executable: executable, arguments: arguments, port: port, directory: directory)
        try server.launch()
        return server
    }

    private init(executable: String, arguments: [String], port: Int, directory: URL) {
        self.executable = executable
        self.arguments = arguments
        self.port = port
        self.directory = directory
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Stops the server (SIGTERM, SIGKILL after 10 s) and waits for it to exit. Idempotent.
    public func stop() {
        let running = lock.withLock { () -> Process? in
            defer { process = nil }
            return process
        }
        guard let running else { return }
        // The guard shell forwards SIGTERM to nats-server and waits for it.
        running.terminate()
        let exited = ExitFlag()
        let serverPID = self.serverPID()
        let guardPID = running.processIdentifier
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 10)
            if !exited.isSet {
                if let serverPID { kill(serverPID, SIGKILL) }
                kill(guardPID, SIGKILL)
            }
        }
        running.waitUntilExit()
        exited.set()
    }

    /// Stops the server and starts it again on the same port with the same store.
    public func restart() throws {
        stop()
        try launch()
    }

    private func launch() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        // The guard: runs nats-server, forwards SIGTERM to it, and stops it when the test
        // process (its parent) is gone.
        let script = """
            parent=$1; shift
            "$@" &
            server=$!
            trap 'kill -TERM $server 2>/dev/null; wait $server; exit 0' TERM INT
            while kill -0 $parent 2>/dev/null && kill -0 $server 2>/dev/null; do sleep 0.2; done
            kill -TERM $server 2>/dev/null
            wait $server
            """
        process.arguments = ["-c", script, "nats-server-guard", String(getpid()), executable] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("server.pid"))
        try process.run()
        lock.withLock { self.process = process }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if Self.acceptsConnections(port: port) { return }
            if !process.isRunning { break }
            usleep(20_000)
        }
        let log = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
        stop()
        throw Failure.didNotStart("port \(port) did not accept connections within 10 s; log:\n\(log.suffix(2_000))")
    }

    private func serverPID() -> pid_t? {
        guard let text = try? String(contentsOf: directory.appendingPathComponent("server.pid"), encoding: .utf8) else {
            return nil
        }
        return pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    private static func findExecutable() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/bin", "/usr/bin"]
        return directories.map { "\($0)/nats-server" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func acceptsConnections(port: Int) -> Bool {
        LoopbackAddress.succeeds(port: port) { socket, address, length in connect(socket, address, length) }
    }
}

/// Set once the server's process has exited, so that the stop watchdog does nothing.
private final class ExitFlag: @unchecked Sendable {
    // `value` is guarded by `lock`.
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
