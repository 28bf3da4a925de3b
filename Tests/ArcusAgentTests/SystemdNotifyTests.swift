import ArcusAgent
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The agent under a `Type=notify` unit: systemd's side of the protocol is a datagram socket named
/// in NOTIFY_SOCKET, which the test plays.
@Suite(.serialized)
struct SystemdNotifyTests {
    @Test("the agent says READY=1 once its API listens, feeds the watchdog, and says STOPPING=1 on SIGTERM")
    func readyWatchdogStopping() async throws {
        let systemd = try NotifySocket()
        defer { systemd.close() }
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-notify-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let agent = try await RunningAgent.launch(
            data: data,
            environment: ["NOTIFY_SOCKET": systemd.path, "WATCHDOG_USEC": "400000"]
        )
        let ready = systemd.receive(until: { $0.contains("READY=1") })
        #expect(ready.contains { $0.contains("READY=1") && $0.contains("STATUS=serving \(agent.url)") }, "\(ready)")
        let beats = systemd.receive(until: { $0 == "WATCHDOG=1" })
        #expect(beats.contains("WATCHDOG=1"), "no watchdog ping within the wait: \(beats)")
        #expect(await agent.halt() == 0)
        let stopping = systemd.receive(until: { $0.hasPrefix("STOPPING=1") })
        #expect(stopping.contains { $0.hasPrefix("STOPPING=1") }, "\(stopping)")
    }

    @Test("without NOTIFY_SOCKET the notifier does nothing; an abstract socket name is understood")
    func notifierEnvironment() throws {
        #expect(!SystemdNotifier(environment: [:]).isActive)
        #expect(!SystemdNotifier(environment: [:]).send("READY=1"))
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "10000000"]).watchdogInterval == .seconds(5))
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "1"]).watchdogInterval == nil)
        #expect(SystemdNotifier(environment: ["WATCHDOG_USEC": "10000000"]).watchdogInterval == nil)
        let abstract = try NotifySocket(abstract: true)
        defer { abstract.close() }
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": abstract.path]).send("READY=1"))
        #expect(abstract.receive(until: { $0 == "READY=1" }) == ["READY=1"])
    }
}

/// A datagram socket standing in for systemd's notify socket.
final class NotifySocket: @unchecked Sendable {
    let path: String
    private let descriptor: Int32

    init(abstract: Bool = false) throws {
        let name = "arcus-notify-\(UInt32.random(in: 0...UInt32.max))"
        path = abstract ? "@\(name)" : FileManager.default.temporaryDirectory.appendingPathComponent(name).path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) } }
        guard descriptor >= 0, bound == 0 else { throw POSIXError(.EADDRINUSE) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Messages received until one matches `done`, or 60 s pass.
    func receive(until done: (String) -> Bool) -> [String] {
        var messages: [String] = []
        let deadline = Date().addingTimeInterval(60)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { continue }
            let message = String(decoding: buffer[..<count], as: UTF8.self)
            messages.append(message)
            if done(message) { break }
        }
        return messages
    }

    func close() {
        Glibc.close(descriptor)
        if !path.hasPrefix("@") { unlink(path) }
    }
}
