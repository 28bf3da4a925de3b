import ArcusAgent
import ArcusCodec
import ArcusLoopback
import ArcusMesh
import ArcusStore
import ArcusSync
import Foundation

/// How much memory one hostile frame makes a peer take: each `HostileFrame` is sent, after a
/// hello and a subscription, to a fresh durable store's sync session (the store subscribes to the
/// collection the frames write) over a loopback link cut into
/// fragments as the mesh does (messages up to a peer session's 1 MiB), and the process's peak
/// resident size is read from /proc/self/status before and after.
///
/// `arcus bench amplification` runs every frame in a child process of its own, so that each
/// figure starts from the same clean baseline and a frame that would take all the memory is
/// killed (and reported as such) instead of taking the machine with it.
public enum AmplificationBench {
    public struct Figures: Sendable {
        public var frame: HostileFrame
        public var wireBytes: Int
        /// Peak resident size less the resident size just before the attack, in MiB.
        public var peakGrowthMiB: Double
        /// Why the session ended: the hostile frame's refusal, or (if it was taken) the garbage
        /// frame sent after it.
        public var endReason: String
        /// Whether the session took the frame (it ended on the garbage that followed).
        public var accepted: Bool

        public var jsonLine: String {
            FigureLine.json([
                ("bench", "amplification"), ("frame", .string(frame.rawValue)), ("wire_bytes", .int(Int64(wireBytes))),
                ("peak_rss_growth_mib", .double((peakGrowthMiB * 10).rounded() / 10)), ("accepted", .bool(accepted)),
                ("end_reason", .string(endReason)),
            ])
        }
    }

    /// The largest sync frame a peer can send the agent: a peer session's message (the AEAD
    /// channel leaves the 4-byte CRC off, and the receiver puts it back).
    public static let largestPeerFrame = SessionConfiguration().maximumMessageSize + 4

    /// Sent after the hostile frame: a version no build speaks, so the session ends on it if it
    /// is still running (and has handled the frame before).
    static let garbage: [UInt8] = [0xFF, 0x00, 0x00, 0x00, 0x00, 0x00]

    /// Runs `frame` against a fresh in-memory store in this process and measures the growth.
    public static func measure(_ frame: HostileFrame) async throws -> Figures {
        // A durable store, as the agent's: what it writes goes to its files, not to this
        // process's memory.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-amplification-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Store(directory: directory)
        var options = SyncEngine.Options()
        options.name = "victim"
        let engine = try SyncEngine(store: store, options: options)
        try store.write { tx in
            for i in 0..<100 { try tx.upsert(["_id": .string("o\(i)"), "status": "OPEN"], into: "orders") }
        }
        let (victimLink, attackerLink) = Loopback.pair(.instant, name: "amplification")
        let victimChannel = LinkSyncChannel(victimLink, maximumFrameSize: largestPeerFrame)
        let attacker = LinkSyncChannel(attackerLink)
        _ = try engine.registerSubscription("SELECT * FROM orders")
        let session = engine.connect(victimChannel)

        var encoder = FrameEncoder()
        try await attacker.send(encoder.encode(.hello(Hello(peerID: [6, 6, 6, 6, 6, 6, 6, 6], protocolVersion: SyncSession.protocolVersion, name: "mallory"))))
        try await attacker.send(encoder.encode(.subscribe(Subscribe(subscriptionID: 1, query: "SELECT * FROM orders"))))
        // The frame is built before the baseline is read: its bytes are the attacker's, not the victim's.
        let bytes = frame.bytes
        let drain = Task { for await _ in attacker.incoming {} }
        try await Task.sleep(for: .milliseconds(200))

        let baseline = try ResidentMemory.resetPeak()
        try await attacker.send(bytes)
        // Only for a session still running: one that refused the frame may already have closed
        // the link (this send then fails, which is not the bench failing: CI saw it 1 run in many).
        try? await attacker.send(garbage)
        await session.waitUntilEnded()
        let peak = try ResidentMemory.read().peakKiB
        attacker.close()
        drain.cancel()
        let reason = await session.endReason ?? "still running"
        return Figures(
            frame: frame, wireBytes: bytes.count, peakGrowthMiB: Double(peak - baseline) / 1024, endReason: reason,
            accepted: reason.contains("unsupported frame version 7")
        )
    }

    /// Runs `arcus bench amplification --frame NAME` (at `executable`) for each frame, killing a
    /// child whose resident size passes `killAboveMiB`; hands `report` one JSON line per frame.
    public static func runInChildren(executable: URL, frames: [HostileFrame], killAboveMiB: Int, report: (String) -> Void) throws {
        for frame in frames { report(try runInChild(executable: executable, frame: frame, killAboveMiB: killAboveMiB)) }
    }

    private static func runInChild(executable: URL, frame: HostileFrame, killAboveMiB: Int) throws -> String {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-amplification-\(UUID().uuidString)")
        let errors = output.appendingPathExtension("err")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: output)
            try? FileManager.default.removeItem(at: errors)
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = ["bench", "amplification", "--frame", frame.rawValue]
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
        var largestKiB = 0
        var killed = false
        let started = ContinuousClock.now
        while process.isRunning {
            if let resident = try? ResidentMemory.read(pid: process.processIdentifier).residentKiB {
                largestKiB = max(largestKiB, resident)
                if resident > killAboveMiB << 10 {
                    killed = true
                    kill(process.processIdentifier, SIGKILL)
                    break
                }
            }
            if ContinuousClock.now - started > .seconds(300) {
                kill(process.processIdentifier, SIGKILL)
                break
            }
            usleep(5_000)
        }
        process.waitUntilExit()
        let line = (try? String(contentsOf: output, encoding: .utf8))?.split(separator: "\n").last.map(String.init)
        if let line, !killed, process.terminationStatus == 0 { return line }
        return FigureLine.json([
            ("bench", "amplification"), ("frame", .string(frame.rawValue)), ("wire_bytes", .int(Int64(frame.bytes.count))),
            ("peak_rss_growth_mib", .string(killed ? "> \(killAboveMiB) (killed)" : "unknown")),
            ("accepted", .null),
            ("end_reason", .string(killed
                ? "the child's resident size passed \(killAboveMiB) MiB (\(largestKiB >> 10) MiB seen) and it was killed"
                : "the child exited with status \(process.terminationStatus) (\(process.terminationReason == .uncaughtSignal ? "a signal" : "an exit"))"
                    + ((try? String(contentsOf: errors, encoding: .utf8))?.split(separator: "\n").last.map { ": \($0)" } ?? ""))),
        ])
    }
}

/// The resident size of a process and its peak, from /proc/PID/status (Linux).
enum ResidentMemory {
    struct Reading {
        var residentKiB: Int
        var peakKiB: Int
        /// Of the resident size, the anonymous pages (the heap and stacks, not the binary's and
        /// libraries' file pages); nil on kernels before 4.5.
        var anonymousKiB: Int?
    }

    static func read(pid: Int32? = nil) throws -> Reading {
        let path = pid.map { "/proc/\($0)/status" } ?? "/proc/self/status"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        func field(_ name: String) -> Int? {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return nil }
            return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
        }
        guard let resident = field("VmRSS"), let peak = field("VmHWM") else {
            throw BenchError("\(path) has no VmRSS and VmHWM lines: resident memory is measured on Linux only")
        }
        return Reading(residentKiB: resident, peakKiB: peak, anonymousKiB: field("RssAnon"))
    }

    /// Resets this process's peak to its resident size now (writing 5 to /proc/self/clear_refs)
    /// and returns that size, in KiB: the baseline for a later peak.
    static func resetPeak() throws -> Int {
        do {
            try "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        } catch {
            throw BenchError("could not reset the peak resident size through /proc/self/clear_refs: \(error)")
        }
        let reading = try read()
        return reading.peakKiB
    }
}
