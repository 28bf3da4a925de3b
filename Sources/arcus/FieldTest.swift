import ArcusAgent
import ArcusBench
import ArcusCRDT
import ArgumentParser
import Foundation

struct FieldTest: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "field-test",
        abstract: "Record a running agent's link figures per peer and transport, as JSON lines, for a field report.",
        discussion: """
              arcus field-test [--agent http://127.0.0.1:4747] --seconds 600 --out pump-1.jsonl [--interval 1]

            Every interval, one line per link of the agent (peer, transport): whether it is active, its RTT \
            and estimated throughput, the goodput of its transport over the interval (arcus_link_bytes_total, \
            both directions; per transport, not per peer), and the reconnects (accepted handshakes) and \
            failovers of its transport since the recording began; between a start and an end event line. \
            rssi_dbm, for a Bluetooth link, is the RSSI the adapter reported with the peer's latest advert \
            (the emulated radio: as its topology file's "signal" says); null otherwise. A progress line every 10 s goes to standard error. \
            Turn one or more logs into an HTML report with `python3 Tools/field-report.py LOG... --out report.html`.
            """
    )

    @Option(help: "The agent's URL, as its ready line gives it.")
    var agent: String = "http://127.0.0.1:4747"

    @OptionGroup var token: AgentTokenOption

    @Option(help: "How long to record, in seconds.")
    var seconds: Double

    @Option(help: "The JSON lines file to write (replaced if it exists).")
    var out: String

    @Option(help: "Seconds between readings.")
    var interval: Double = 1

    func run() async throws {
        do {
            try await record()
        } catch {
            Terminal.writeError(error.message + "\n")
            throw ExitCode(error.exitStatus)
        }
    }

    private func record() async throws(CommandError) {
        guard seconds.isFinite, seconds > 0 else { throw CommandError("--seconds must be a number of seconds above 0, not \(seconds)", exitStatus: 2) }
        guard interval.isFinite, interval > 0 else { throw CommandError("--interval must be a number of seconds above 0, not \(interval)", exitStatus: 2) }
        let client = try AgentClient(url: agent, tokenFile: token.tokenFile)
        let log = try FieldLog(path: out)

        let clock = ContinuousClock()
        let start = clock.now
        let baseline: AgentReading
        do {
            baseline = try await Self.read(client)
        } catch {
            log.discard()
            throw error
        }
        var recorder = FieldRecorder(
            baseline: baseline, settings: .init(agentURL: client.baseURL, seconds: seconds, interval: interval, output: out)
        )
        try log.write(recorder.startLine(time: Date()))
        try log.write(recorder.samples(of: baseline, t: 0, time: Date()))

        var unreachable = 0
        var nextProgress = 10.0
        var tick = 1
        // Readings keep to the interval's grid; one that is late (a slow answer) is not made up
        // for with a burst, the grid's missed ticks are skipped.
        while Double(tick) * interval <= seconds + 1e-9 {
            try? await Task.sleep(until: start + .seconds(Double(tick) * interval), clock: clock)
            let t = (clock.now - start).inSeconds
            tick = max(tick + 1, Int((t / interval).rounded(.down)) + 1)
            do {
                try log.write(recorder.samples(of: try await Self.read(client), t: t, time: Date()))
            } catch {
                // An agent restarting in the field is a finding, not the end of the recording.
                unreachable += 1
                try log.write(recorder.unreachableLine(t: t, time: Date(), error: error.message))
                Terminal.writeError("field-test: \(error.message)\n")
            }
            if t >= nextProgress {
                Terminal.writeError("field-test: \(Int(t)) s of \(Self.format(seconds)), \(recorder.samplesWritten) samples written, "
                    + "\(Self.count(recorder.peersSeen.count, "peer")) seen\n")
                nextProgress += 10
            }
        }
        try log.write(recorder.endLine(t: (clock.now - start).inSeconds, time: Date(), unreachable: unreachable))
        Terminal.writeError("field-test: wrote \(recorder.samplesWritten) samples of \(Self.count(recorder.peersSeen.count, "peer")) to \(out)\n")
    }

    private static func read(_ client: AgentClient) async throws(CommandError) -> AgentReading {
        let status = try await client.status()
        let metrics = try await client.metrics()
        return try AgentReading(status: status, metrics: metrics)
    }

    private static func count(_ number: Int, _ noun: String) -> String {
        "\(number) \(noun)\(number == 1 ? "" : "s")"
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
    }
}

/// The JSON lines file of one recording, opened (and so checked writable) before the first
/// reading; each line is written through at once, so an interrupted recording keeps what it had.
private final class FieldLog {
    private let path: String
    private let handle: FileHandle

    init(path: String) throws(CommandError) {
        self.path = path
        guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
            throw CommandError("--out \(path): cannot write there (does its directory exist, and may you write to it?)", exitStatus: 2)
        }
        self.handle = handle
    }

    func write(_ line: Value) throws(CommandError) {
        try write([line])
    }

    func write(_ lines: [Value]) throws(CommandError) {
        guard !lines.isEmpty else { return }
        do {
            try handle.write(contentsOf: Data(lines.map { $0.jsonString + "\n" }.joined().utf8))
        } catch {
            throw CommandError("cannot write to \(path): \(error)")
        }
    }

    /// Removes the file, for a recording that never started.
    func discard() {
        try? handle.close()
        try? FileManager.default.removeItem(atPath: path)
    }
}
