import ArcusAgent
import ArcusBench
import ArcusCRDT
import Testing

/// `arcus bench ble-emulated`, small: the bulk and the updates arrive over the emulated radio,
/// and the figures are consistent — goodput can approach the link's rate but not pass it (the
/// radio paces every SDU by its airtime). No speed is asserted.
@Suite(.serialized)
struct BLEBenchTests {
    @Test("a bulk sync and single updates cross one emulated link; goodput stays under the link rate; the figures agree")
    func smallRun() async throws {
        var options = BLEBench.Options()
        options.documents = 300
        options.updates = 3
        let figures = try await BLEBench(options: options).run()
        #expect(figures.converged, "\(figures.jsonLine)")
        #expect(figures.syncBytes > 0 && figures.wireBytes > figures.syncBytes, "\(figures.jsonLine)")
        #expect(figures.goodputRatio > 0 && figures.goodputRatio < 1.05, "\(figures.jsonLine)")
        #expect(figures.updates == 3 && figures.updateP50 >= figures.linkLatency * 0.9, "an update beat the link's latency: \(figures.jsonLine)")
        guard case .object(let fields) = try Value(json: figures.jsonLine) else { Issue.record("not a JSON object"); return }
        for key in ["goodput_ratio", "update_p50_ms", "link_latency_ms", "sync_bytes", "wire_bytes"] {
            #expect(fields[key] != nil, "\(key) missing from \(figures.jsonLine)")
        }
    }
}
