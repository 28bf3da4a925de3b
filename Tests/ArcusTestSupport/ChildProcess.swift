#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// A child process started with posix_spawn, for tests that run programs (`arcus`, daemons).
///
/// Foundation's `Process.run()` on Swift 6.3 can read past a buffer while it sets the child up
/// (swift-corelibs-foundation #5472) and crashed the test process 2 runs in ~12 of the
/// sync-and-agent phase. This type spawns directly: the child gets standard input from
/// /dev/null, standard output and error into the given files, and no other descriptor of the
/// test process (a listening socket of an in-process agent must not outlive it in a child).
///
/// It reaps its own child with waitpid(pid) only, so Foundation's own SIGCHLD handling of the
/// processes it started is untouched.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked: `ended` is only read and written under `lock`.
    public let processIdentifier: pid_t
    private let lock = NSLock()
    private var ended: Int32?

    public struct SpawnError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Starts `executable arguments…`.
    /// - Parameters:
    ///   - environment: the child's whole environment; this process's own when nil.
    ///   - standardOutput, standardError: files to append to (created if missing); /dev/null
    ///     when nil.
    public init(executable: String, arguments: [String], environment: [String: String]? = nil,
                standardOutput: String? = nil, standardError: String? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, standardOutput ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, standardError ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        Self.closeDescriptorsFromThree(&actions)

        // A child starts with default signal dispositions and an empty mask, whatever this
        // process (or the test runner) blocked or ignored.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { variables.forEach { free($0) } }

        var pid = pid_t()
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, variables)
        guard status == 0 else {
            throw SpawnError(description: "cannot start \(executable): \(String(cString: strerror(status)))")
        }
        processIdentifier = pid
    }

    /// glibc 2.34+ has posix_spawn_file_actions_addclosefrom_np, but its header declares it
    /// only under _GNU_SOURCE, which Swift's Glibc module does not see; it is looked up by name.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    private static func closeDescriptorsFromThree(_ actions: inout posix_spawn_file_actions_t) {
        if let addCloseFrom {
            _ = addCloseFrom(&actions, 3)
            return
        }
        // An older libc: close what is open now, by number.
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for case let descriptor? in open.map({ Int32($0) }) where descriptor > 2 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
    }

    /// Whether the child has not ended yet (reaping it if it has).
    public var isRunning: Bool { status(blocking: false) == nil }

    /// Waits for the child to end; blocks the calling thread.
    public func waitUntilExit() { _ = status(blocking: true) }

    /// Waits for the child to end on a thread of its own, leaving the cooperative pool free.
    public func exit() async -> Int32 {
        await onThreadOfItsOwn { self.status(blocking: true)! }
    }

    /// Its exit status once it has ended: the code it exited with, or minus the signal that
    /// ended it. Waits for it.
    public var terminationStatus: Int32 { status(blocking: true)! }

    /// Whether a signal ended it. Waits for it.
    public var endedBySignal: Bool { terminationStatus < 0 }

    /// Sends SIGTERM (or `signal`) and reaps the child on a thread of its own: for a `defer` in
    /// an async test, which cannot await `exit()` and must not hold a thread of the cooperative
    /// pool while the child ends.
    public func dismiss(signal: Int32 = SIGTERM) {
        terminate(signal: signal)
        Thread { self.waitUntilExit() }.start()
    }

    /// Sends SIGTERM (or `signal`) unless it has already ended.
    public func terminate(signal: Int32 = SIGTERM) {
        if isRunning { kill(processIdentifier, signal) }
    }

    /// Every waitpid is made under the lock and never blocks, so two threads asking at once
    /// cannot both reap, nor one see ECHILD before the other has recorded the status; a blocking
    /// wait polls every 5 ms.
    private func status(blocking: Bool) -> Int32? {
        while true {
            if let found = lock.withLock({ reap() }) { return found }
            guard blocking else { return nil }
            usleep(5_000)
        }
    }

    private func reap() -> Int32? {
        if let ended { return ended }
        var raw: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(processIdentifier, &raw, WNOHANG) } while result == -1 && errno == EINTR
        guard result == processIdentifier else { return nil }
        // WTERMSIG and WEXITSTATUS are macros, which Swift does not import.
        let signal = raw & 0x7f
        ended = signal == 0 ? (raw >> 8) & 0xff : -signal
        return ended
    }
}
