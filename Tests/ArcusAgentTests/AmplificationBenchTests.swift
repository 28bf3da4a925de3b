import ArcusAgent
import ArcusBench
import ArcusCRDT
import Foundation
import Testing

/// Measured, not assumed: `arcus bench amplification` sends every hostile frame of issue 17's
/// finding 5 to a real sync session over a fragmenting loopback link, each in a child process,
/// and reads the child's peak resident size. None may grow it past 64 MiB; a child that passes
/// 256 MiB is killed (as each of the frames that exhausted memory before the bounds would be).
@Suite("Amplification bench")
struct AmplificationBenchTests {
    @Test("no hostile frame makes a sync session's process grow by more than 64 MiB")
    func peakMemory() async throws {
        let outcome = try await ArcusProcess.run(["bench", "amplification", "--kill-above-mib", "256"])
        #expect(outcome.status == 0, "\(outcome.standardError)")
        let lines = outcome.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.count == HostileFrame.allCases.count, "\(outcome.standardOutput)")
        // Frames the session may take: the largest batch within the allowance (merged), and a
        // `missing` message within its bounds. Every other frame is refused.
        let acceptable: Set<String> = [HostileFrame.manyCellsMerged.rawValue, HostileFrame.missingLongIDs.rawValue]
        for line in lines {
            print(line)
            let figures = try Value(json: line)
            let frame = figures[path: ["frame"]]?.stringValue ?? "?"
            let growth = figures[path: ["peak_rss_growth_mib"]]?.numberValue
            #expect(growth.map { $0 <= 64 } == true, "\(frame): \(line)")
            #expect(figures[path: ["accepted"]] == .bool(acceptable.contains(frame)), "\(frame): \(line)")
        }
    }
}
