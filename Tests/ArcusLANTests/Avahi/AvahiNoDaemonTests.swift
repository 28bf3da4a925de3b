import Foundation
import Testing
import ArcusLAN

/// An agent on a machine with no avahi-daemon (and here no D-Bus system bus either). libdbus reads
/// the bus address once per process, so this runs the test binary again as a child whose bus
/// address leads nowhere, and reads the child's verdict.
@Suite struct AvahiNoDaemonTests {
    static let childRole = "ARCUS_AVAHI_TEST_CHILD"

    @Test func withNoDaemonReachableTheAgentWarnsOnceAndGoesOn() async throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        child.arguments = ["--testing-library", "swift-testing", "--filter", "inAProcessWithNoSystemBus"]
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent/arcus-test-bus"
        environment[Self.childRole] = "no-daemon"
        child.environment = environment
        let output = Pipe()
        child.standardOutput = output
        child.standardError = output

        try child.run()
        // Not a speed check: only a child that hangs for good is stopped.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(120))
            child.terminate()
        }
        let transcript = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        watchdog.cancel()

        #expect(child.terminationStatus == 0, "the child failed:\n\(transcript)")
        #expect(transcript.contains("the one warning: \(AvahiError.noDaemon.warning)"), "the child said:\n\(transcript)")
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment[childRole] == "no-daemon", "runs only as the child of the test above"))
    func inAProcessWithNoSystemBus() async throws {
        let service = AvahiService(interface: AvahiDaemon.loopback)
        let log = EventLog(of: service)
        let txt = ServiceTXT(peer: String(repeating: "0f", count: 16), meshHash: "0123456789abcdef", protocolVersion: 1)
        try service.start(advertising: Advertisement(name: "arcus-test-alone", port: 7041, txt: txt))
        let warning = try await log.first("a warning") { $0.warning }

        service.stop()
        try await log.finished()
        #expect(await log.events == [.warning(AvahiError.noDaemon.warning)])
        print("the one warning: \(warning)")
    }
}
