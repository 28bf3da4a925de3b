import ArcusAgent
import ArcusBench
import ArcusCRDT
import Testing

/// `arcus bench lan`, small: what it measures happens (every document and every update arrives
/// over real loopback TCP between two `arcus agent` processes), and what it prints is consistent. No timing is
/// asserted: that is the benchmark's job, not a test's.
@Suite(.serialized)
struct LANBenchTests {
    @Test("a fresh follower catches up every document over loopback TCP, every timed update reaches it, and the figures agree")
    func smallRun() async throws {
        var options = LANBench.Options()
        options.documents = 300
        options.updates = 5
        options.executable = try ArcusProcess.executable()
        let figures = try await LANBench(options: options).run()
        #expect(figures.completed && figures.converged, "\(figures.jsonLine)")
        // Each agent is a process of its own, measured on its own.
        #expect(figures.sourcePeakRSSMiB > 0 && figures.followerPeakRSSMiB > 0, "\(figures.jsonLine)")
        #expect(figures.followerExit == "exit status 0", "\(figures.jsonLine)")
        #expect(figures.documents == 300 && figures.updates == 5)
        // The wire carries the sync frames plus the handshake, session framing and AEAD tags.
        #expect(figures.syncFrameBytes > 0 && figures.wireBytes > figures.syncFrameBytes, "\(figures.jsonLine)")
        // Fleet-shaped documents (seed 1) cost far less on the wire than their JSON text.
        #expect(figures.jsonBytes > 0 && figures.wireBytes * 2 < figures.jsonBytes, "\(figures.jsonLine)")
        #expect(figures.latencyP50 > 0 && figures.latencyP50 <= figures.latencyP99 && figures.latencyP99 <= figures.latencyMax)
        // Both agents worked on the catch-up: each spent processor time on it.
        #expect((figures.sourceCatchUpCPUSeconds ?? 0) > 0 && (figures.followerCatchUpCPUSeconds ?? 0) > 0, "\(figures.jsonLine)")
        let line = try Value(json: figures.jsonLine)
        guard case .object(let fields) = line else { Issue.record("not a JSON object: \(figures.jsonLine)"); return }
        for key in ["catch_up_s", "docs_per_s", "source_peak_rss_mb", "follower_peak_rss_mb", "converged", "wire_bytes", "json_bytes", "wire_per_json", "update_p50_ms", "update_p99_ms",
                    "source_catch_up_cpu_s", "follower_catch_up_cpu_s", "source_cpu_us_per_doc", "follower_cpu_us_per_doc"] {
            #expect(fields[key] != nil, "\(key) missing from \(figures.jsonLine)")
        }
    }
}
