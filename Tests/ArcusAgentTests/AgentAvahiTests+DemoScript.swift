import Foundation
import Testing

extension AgentAvahiTests {
    /// The README's run command ends in Tools/demo.sh; this runs it as a newcomer would, on the
    /// avahi-daemon the pass started, with the arcus built beside the tests.
    @Test("Tools/demo.sh: three agents find each other over mDNS, sync, and one comes back from SIGKILL; it says they converged")
    func demoScript() throws {
        try #require(AvahiDaemonState.runs, "avahi-daemon is not running: start it confined to loopback with `Tools/start-avahi.sh start`")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-demo-\(UUID().uuidString).log")
        FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [root.appendingPathComponent("Tools/demo.sh").path, "--arcus", try ArcusProcess.executable().path]
        process.currentDirectoryURL = root
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = process.standardOutput
        try process.run()
        let deadline = Date().addingTimeInterval(240)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.2) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("using the avahi-daemon that is running"), "\(text)")
        #expect(text.contains("converged: all three hold the same cars"), "\(text)")
        #expect(text.contains(#"{"galley sees":["car-1 blue"]}"#), "a write did not show up on another agent:\n\(text)")
    }
}
